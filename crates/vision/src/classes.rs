//! Segmentation classes and the one table that maps the skeleton's body
//! parts onto them (RTPF §IV-D: "the human silhouette is segmented in three
//! classes of regions (face, arms and clothes)"; posecloud splits clothes
//! into shirt and trousers).
//!
//! The tracker renders [`skeleton::BodyPart`] labels (`1..=12`) and remaps
//! them through [`ClassMap::label_table`] before comparing them with the
//! label image the segmenter writes (ids `0..=4`, so every label image is a
//! valid [`labels::Observation`]).
//!
//! | id | class      | body parts                                              |
//! |----|------------|---------------------------------------------------------|
//! | 0  | background | —                                                       |
//! | 1  | head       | head, neck (face, hair and neck skin)                   |
//! | 2  | skin       | hands, fingers; forearms with short sleeves; upper arms with short sleeves |
//! | 3  | shirt      | torso; upper arms and forearms with long sleeves; links |
//! | 4  | trousers   | pelvis, thighs, shanks, feet (shoes count as trousers)  |

use labels::LabelMap;
use skeleton::BodyPart;

/// A segmentation class; the discriminant is the label-image id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum SegClass {
    Background = 0,
    Head = 1,
    Skin = 2,
    Shirt = 3,
    Trousers = 4,
}

/// Number of foreground classes (ids `1..=SEG_CLASSES`).
pub const SEG_CLASSES: usize = 4;

// Every label image must be a valid `labels::Observation` (ids ≤ C).
const _: () = assert!(SEG_CLASSES <= labels::CLASSES);

impl SegClass {
    /// Every class, background first, in id order.
    pub const ALL: [SegClass; SEG_CLASSES + 1] = [
        Self::Background,
        Self::Head,
        Self::Skin,
        Self::Shirt,
        Self::Trousers,
    ];

    /// The id in a label image.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The class of an id, `None` above [`SEG_CLASSES`].
    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.get(usize::from(id)).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Background => "background",
            Self::Head => "head",
            Self::Skin => "skin",
            Self::Shirt => "shirt",
            Self::Trousers => "trousers",
        }
    }

    /// The colour that label images are written in (PNG previews).
    pub fn preview_colour(self) -> [u8; 3] {
        match self {
            Self::Background => [0, 0, 0],
            Self::Head => [255, 220, 40],
            Self::Skin => [255, 110, 90],
            Self::Shirt => [60, 140, 255],
            Self::Trousers => [70, 200, 90],
        }
    }
}

/// Sleeve length: decides whether the arms are skin or shirt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Sleeves {
    /// Upper arms and forearms bare (skin).
    #[default]
    Short,
    /// Upper arms and forearms covered by the shirt.
    Long,
}

/// The segmentation class of every [`BodyPart`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassMap {
    table: [SegClass; labels::CLASSES],
}

impl Default for ClassMap {
    fn default() -> Self {
        Self::for_sleeves(Sleeves::Short)
    }
}

impl ClassMap {
    /// The map for a person in a shirt with `sleeves` and trousers (the
    /// table in the module docs).
    pub fn for_sleeves(sleeves: Sleeves) -> Self {
        let arm = match sleeves {
            Sleeves::Short => SegClass::Skin,
            Sleeves::Long => SegClass::Shirt,
        };
        Self::from_fn(|part| match part {
            BodyPart::Head | BodyPart::Neck => SegClass::Head,
            BodyPart::Hand | BodyPart::Finger => SegClass::Skin,
            BodyPart::UpperArm | BodyPart::Forearm => arm,
            BodyPart::Torso | BodyPart::Link => SegClass::Shirt,
            BodyPart::Pelvis | BodyPart::Thigh | BodyPart::Shank | BodyPart::Foot => {
                SegClass::Trousers
            }
        })
    }

    /// A map from any function of the part.
    pub fn from_fn(f: impl Fn(BodyPart) -> SegClass) -> Self {
        Self {
            table: BodyPart::ALL.map(f),
        }
    }

    /// The class of `part`.
    pub fn class_of(&self, part: BodyPart) -> SegClass {
        self.table[usize::from(part.label()) - 1]
    }

    /// Changes the class of one part.
    pub fn set(&mut self, part: BodyPart, class: SegClass) {
        self.table[usize::from(part.label()) - 1] = class;
    }

    /// `table[l − 1]` = the class id of body-part label `l` (`1..=12`), the
    /// [`labels::LabelMap`] the tracker remaps rendered labels with.
    pub fn label_table(&self) -> LabelMap {
        self.table.map(SegClass::id)
    }

    /// Remaps a body-part label image (`0..=12`) to class ids in place;
    /// labels above 12 become background.
    pub fn remap(&self, labels: &mut [u8]) {
        let t = self.label_table();
        for l in labels {
            *l = match *l {
                0 => 0,
                x => t.get(usize::from(x) - 1).copied().unwrap_or(0),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_small_and_round_trip() {
        for (i, c) in SegClass::ALL.iter().enumerate() {
            assert_eq!(usize::from(c.id()), i);
            assert_eq!(SegClass::from_id(c.id()), Some(*c));
        }
        assert_eq!(SegClass::from_id(5), None);
    }

    #[test]
    fn sleeves_decide_the_arms() {
        let short = ClassMap::for_sleeves(Sleeves::Short);
        let long = ClassMap::for_sleeves(Sleeves::Long);
        assert_eq!(short.class_of(BodyPart::UpperArm), SegClass::Skin);
        assert_eq!(long.class_of(BodyPart::UpperArm), SegClass::Shirt);
        assert_eq!(long.class_of(BodyPart::Forearm), SegClass::Shirt);
        assert_eq!(long.class_of(BodyPart::Hand), SegClass::Skin);
        assert_eq!(short.class_of(BodyPart::Head), SegClass::Head);
        assert_eq!(short.class_of(BodyPart::Foot), SegClass::Trousers);
        let t = long.label_table();
        assert_eq!(t[usize::from(BodyPart::Torso.label()) - 1], 3);
        assert!(t.iter().all(|&c| (1..=SEG_CLASSES as u8).contains(&c)));
        labels::check_label_map(&t).unwrap();
    }

    #[test]
    fn remap_gives_a_valid_observation() {
        let map = ClassMap::default();
        let mut labels: Vec<u8> = (0..=12).collect();
        labels.push(200);
        map.remap(&mut labels);
        assert_eq!(labels[0], 0);
        assert_eq!(labels[usize::from(BodyPart::Head.label())], 1);
        assert_eq!(labels[13], 0);
        labels::Observation::new(14, 1, labels).unwrap();
    }
}
