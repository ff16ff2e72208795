//! PNG figures for the examples, with plotters' bitmap back end: charts of
//! line series (linear or log axes, [`Panel::new`]) and 2-D drawings of
//! polylines with equal axis scales ([`Panel::drawing`]), laid out in a grid
//! by [`save_png`].
//!
//! Text is rendered with the `ab_glyph` back end from the DejaVu Sans font
//! embedded from `assets/fonts/` (see its README for the licence), so
//! plotting needs no system fonts, fontconfig or freetype. A figure these
//! panels cannot express (the walker's camera views) draws with the
//! re-exported [`plotters`] after [`register_font`], in the same [`FAMILY`].
//!
//! The crate is the workspace's one dependency on plotters; only examples
//! use it (`examples/` and the `sparse`, `track` and `walker` examples).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

pub use plotters;

/// Why a figure was not written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("the embedded DejaVu Sans font could not be parsed")]
    Font,
    #[error("nothing to plot")]
    NoPanels,
    #[error("plotting {path}: {message}")]
    Draw { path: PathBuf, message: String },
}

static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// The family every text style of these plots names.
pub const FAMILY: &str = "sans-serif";

/// Registers the embedded font as [`FAMILY`] (once; later calls return the
/// first outcome).
pub fn register_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok { Ok(()) } else { Err(PlotError::Font) }
}

/// The Tableau-10 palette: distinguishable lines, indexed cyclically.
const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// Colour `i` of the palette (cyclic).
pub fn colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// Black, for reference lines and markers.
pub const INK: usize = usize::MAX;

fn rgb(i: usize) -> RGBColor {
    if i == INK { BLACK } else { colour(i) }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    /// A polyline of the given width (px).
    Line(u32),
    /// A polyline with a dot of the given radius at every point.
    LineDots(u32, u32),
    /// Filled dots of the given radius.
    Dots(u32),
    /// Crosses of the given size.
    Crosses(u32),
}

/// One series of a panel.
#[derive(Clone, Debug)]
pub struct Series {
    /// Shown in the legend when set.
    pub label: Option<String>,
    pub points: Vec<(f64, f64)>,
    /// Palette index ([`INK`] for black).
    pub colour: usize,
    pub mark: Mark,
}

impl Series {
    /// A 2-px line.
    pub fn line(label: impl Into<Option<String>>, points: Vec<(f64, f64)>, colour: usize) -> Self {
        Self {
            label: label.into(),
            points,
            colour,
            mark: Mark::Line(2),
        }
    }

    pub fn mark(mut self, mark: Mark) -> Self {
        self.mark = mark;
        self
    }
}

/// Where a panel's legend goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Corner {
    #[default]
    UpperRight,
    /// Halfway down the right edge (plotters' default place).
    MiddleRight,
    UpperLeft,
    LowerRight,
    LowerLeft,
}

/// One axis of a panel.
#[derive(Clone, Debug, Default)]
pub struct PlotAxis {
    pub label: String,
    pub scale: Scale,
    /// The range drawn instead of the data's with a margin.
    pub range: Option<Range<f64>>,
}

impl PlotAxis {
    /// A linear axis over the data's span.
    pub fn new(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            ..Self::default()
        }
    }

    /// Whether `v` can be drawn: a log axis shows positive values only.
    fn shows(&self, v: f64) -> bool {
        self.scale == Scale::Linear || v > 0.0
    }

    /// The fixed range, else the data's `(min, max)` with a margin.
    fn span(&self, data: (f64, f64)) -> Range<f64> {
        self.range.clone().unwrap_or_else(|| pad(data, self.scale))
    }
}

/// One chart of a figure.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    pub title: String,
    pub x: PlotAxis,
    pub y: PlotAxis,
    /// Same length per unit on both axes (drawings of bodies).
    pub equal_aspect: bool,
    pub series: Vec<Series>,
    /// Vertical reference lines at these x (dashed grey).
    pub vlines: Vec<f64>,
    /// Horizontal reference lines at these y (dashed grey).
    pub hlines: Vec<f64>,
    /// Legend corner (series with a label are listed).
    pub legend: Corner,
    /// Intervals of x shaded light grey behind the series (an occlusion gap).
    pub shaded: Vec<Range<f64>>,
}

impl Panel {
    /// A line plot with linear axes.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            x: PlotAxis::new(x_label),
            y: PlotAxis::new(y_label),
            ..Self::default()
        }
    }

    /// A 2-D drawing: equal axis scales.
    pub fn drawing(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            equal_aspect: true,
            ..Self::new(title, x_label, y_label)
        }
    }

    pub fn log_y(mut self) -> Self {
        self.y.scale = Scale::Log;
        self
    }

    pub fn log_x(mut self) -> Self {
        self.x.scale = Scale::Log;
        self
    }

    pub fn legend_at(mut self, corner: Corner) -> Self {
        self.legend = corner;
        self
    }

    /// Draws x over `range` whatever the data span.
    pub fn fixed_x(mut self, range: Range<f64>) -> Self {
        self.x.range = Some(range);
        self
    }

    /// Draws y over `range` whatever the data span.
    pub fn fixed_y(mut self, range: Range<f64>) -> Self {
        self.y.range = Some(range);
        self
    }

    pub fn push(&mut self, series: Series) {
        self.series.push(series);
    }

    /// The points drawn on a log axis must be positive; the others are left out.
    fn visible(&self, p: &(f64, f64)) -> bool {
        p.0.is_finite() && p.1.is_finite() && self.x.shows(p.0) && self.y.shows(p.1)
    }

    fn bounds(&self) -> Option<(Range<f64>, Range<f64>)> {
        let mut x = (f64::INFINITY, f64::NEG_INFINITY);
        let mut y = (f64::INFINITY, f64::NEG_INFINITY);
        for p in self
            .series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|p| self.visible(p))
        {
            x = (x.0.min(p.0), x.1.max(p.0));
            y = (y.0.min(p.1), y.1.max(p.1));
        }
        if !x.0.is_finite() {
            return None;
        }
        for &v in &self.vlines {
            if self.x.shows(v) {
                x = (x.0.min(v), x.1.max(v));
            }
        }
        for &v in &self.hlines {
            if self.y.shows(v) {
                y = (y.0.min(v), y.1.max(v));
            }
        }
        Some((self.x.span(x), self.y.span(y)))
    }
}

/// A margin around the data: 5% on linear axes, out to whole decades on
/// log axes.
fn pad((lo, hi): (f64, f64), scale: Scale) -> Range<f64> {
    match scale {
        Scale::Linear => {
            let span = (hi - lo).max(1e-9 * lo.abs().max(1.0));
            let (lo, hi) = if hi - lo < 1e-12 {
                (lo - 0.5 * span, hi + 0.5 * span)
            } else {
                (lo, hi)
            };
            let m = 0.05 * (hi - lo);
            (lo - m)..(hi + m)
        }
        Scale::Log => {
            let lo = 10f64.powf(lo.log10().floor());
            let mut hi = 10f64.powf(hi.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
            // A hair beyond the decades, so that both end decades get a tick.
            (lo * 0.97)..(hi * 1.03)
        }
    }
}

/// Tick label of an axis of `scale` spanning `decades` (log axes).
fn tick_label(v: f64, scale: Scale, decades: f64) -> String {
    match scale {
        Scale::Linear => linear_label(v),
        Scale::Log => log_label(v, decades),
    }
}

/// Tick label of a linear axis: short, no trailing zeros.
fn linear_label(v: f64) -> String {
    // Ticks computed as multiples of the step land a rounding error off 0.
    if v.abs() < 1e-10 {
        return "0".into();
    }
    let a = v.abs();
    if (1e-3..1e5).contains(&a) {
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" { "0".into() } else { s.to_string() }
    } else {
        format!("{v:.0e}")
    }
}

/// Tick label of a log axis: only whole decades are labelled (`1e-3`),
/// unless the axis spans less than two decades.
fn log_label(v: f64, decades: f64) -> String {
    let e = v.log10();
    if decades < 2.0 {
        return format!("{v:.1e}");
    }
    if (e - e.round()).abs() < 1e-9 {
        let e = e.round() as i32;
        match e {
            0 => "1".into(),
            1 => "10".into(),
            2 => "100".into(),
            -1 => "0.1".into(),
            _ => format!("1e{e}"),
        }
    } else {
        String::new()
    }
}

/// Text sizes (px) for figures whose panels are about 800 px wide.
const TITLE_SIZE: u32 = 26;
const LABEL_SIZE: u32 = 19;
const DESC_SIZE: u32 = 21;
const LEGEND_SIZE: u32 = 17;

/// Writes `panels` laid out in `columns` columns, each panel
/// `panel_size` pixels, to a PNG file.
pub fn save_png(
    path: &Path,
    panels: &[Panel],
    columns: usize,
    panel_size: (u32, u32),
) -> Result<(), PlotError> {
    register_font()?;
    if panels.is_empty() {
        return Err(PlotError::NoPanels);
    }
    let columns = columns.clamp(1, panels.len());
    let rows = panels.len().div_ceil(columns);
    let size = (panel_size.0 * columns as u32, panel_size.1 * rows as u32);
    let root = BitMapBackend::new(path, size).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| PlotError::Draw {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let areas = root.split_evenly((rows, columns));
    for (panel, area) in panels.iter().zip(&areas) {
        draw_panel(panel, area).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

const X_LABEL_AREA: u32 = 58;
const Y_LABEL_AREA: u32 = 86;
const MARGIN: u32 = 18;

fn draw_panel(panel: &Panel, area: &DrawingArea<BitMapBackend<'_>, Shift>) -> DrawResult {
    let Some((mut xr, mut yr)) = panel.bounds() else {
        area.draw(&Text::new(
            format!("{}: no data", panel.title),
            (20, 20),
            (FAMILY, LABEL_SIZE).into_font(),
        ))?;
        return Ok(());
    };
    if panel.equal_aspect && panel.x.scale == Scale::Linear && panel.y.scale == Scale::Linear {
        // Widen one range so that a unit has the same length on both axes.
        let (w, h) = area.dim_in_pixel();
        let pw = w.saturating_sub(Y_LABEL_AREA + 2 * MARGIN).max(1) as f64;
        let ph = h
            .saturating_sub(X_LABEL_AREA + 2 * MARGIN + TITLE_SIZE + 10)
            .max(1) as f64;
        let (sx, sy) = ((xr.end - xr.start) / pw, (yr.end - yr.start) / ph);
        if sx > sy {
            let c = 0.5 * (yr.start + yr.end);
            let half = 0.5 * sx * ph;
            yr = (c - half)..(c + half);
        } else {
            let c = 0.5 * (xr.start + xr.end);
            let half = 0.5 * sy * pw;
            xr = (c - half)..(c + half);
        }
    }
    let xdec = (xr.end / xr.start).log10();
    let ydec = (yr.end / yr.start).log10();
    match (panel.x.scale, panel.y.scale) {
        (Scale::Linear, Scale::Linear) => draw_chart(panel, area, xr, yr, xdec, ydec),
        (Scale::Linear, Scale::Log) => draw_chart(panel, area, xr, yr.log_scale(), xdec, ydec),
        (Scale::Log, Scale::Linear) => draw_chart(panel, area, xr.log_scale(), yr, xdec, ydec),
        (Scale::Log, Scale::Log) => {
            draw_chart(panel, area, xr.log_scale(), yr.log_scale(), xdec, ydec)
        }
    }
}

fn draw_chart<X, Y>(
    panel: &Panel,
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    x: X,
    y: Y,
    x_decades: f64,
    y_decades: f64,
) -> DrawResult
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FAMILY, TITLE_SIZE))
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(x, y)?;
    let (xs, ys) = (panel.x.scale, panel.y.scale);
    let fx = move |v: &f64| tick_label(*v, xs, x_decades);
    let fy = move |v: &f64| tick_label(*v, ys, y_decades);
    chart
        .configure_mesh()
        .x_desc(panel.x.label.as_str())
        .y_desc(panel.y.label.as_str())
        .label_style((FAMILY, LABEL_SIZE))
        .axis_desc_style((FAMILY, DESC_SIZE))
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(205, 205, 205))
        .draw()?;

    let (x_range, y_range) = (chart.x_range(), chart.y_range());
    for span in &panel.shaded {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(span.start, y_range.start), (span.end, y_range.end)],
            RGBColor(220, 220, 220).filled(),
        )))?;
    }
    let grey = RGBColor(120, 120, 120);
    for &v in &panel.vlines {
        chart.draw_series(DashedLineSeries::new(
            [(v, y_range.start), (v, y_range.end)],
            8,
            5,
            grey.stroke_width(2),
        ))?;
    }
    for &v in &panel.hlines {
        chart.draw_series(DashedLineSeries::new(
            [(x_range.start, v), (x_range.end, v)],
            8,
            5,
            grey.stroke_width(2),
        ))?;
    }

    let mut legend = false;
    for s in &panel.series {
        let c = rgb(s.colour);
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|p| panel.visible(p))
            .collect();
        // Thick polylines are drawn segment by segment: plotters' joins
        // of wide strokes leave spikes at sharp turns of short segments.
        let segments = |w: u32| {
            let style = c.stroke_width(w);
            let single = (pts.len() == 1).then(|| PathElement::new(vec![pts[0], pts[0]], style));
            pts.windows(2)
                .map(move |s| PathElement::new(vec![s[0], s[1]], style))
                .chain(single)
                .collect::<Vec<_>>()
        };
        let anno = match s.mark {
            Mark::Line(w) => chart.draw_series(segments(w))?,
            Mark::LineDots(w, r) => {
                chart.draw_series(segments(w))?;
                chart.draw_series(pts.into_iter().map(|p| Circle::new(p, r, c.filled())))?
            }
            Mark::Dots(r) => {
                chart.draw_series(pts.into_iter().map(|p| Circle::new(p, r, c.filled())))?
            }
            Mark::Crosses(r) => {
                chart.draw_series(pts.into_iter().map(|p| Cross::new(p, r, c.stroke_width(3))))?
            }
        };
        if let Some(label) = &s.label {
            legend = true;
            let mark = s.mark;
            anno.label(label.as_str()).legend(
                move |(x, y)| -> DynElement<'static, BitMapBackend<'_>, (i32, i32)> {
                    match mark {
                        Mark::Line(w) | Mark::LineDots(w, _) => {
                            PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(w))
                                .into_dyn()
                        }
                        Mark::Dots(r) => Circle::new((x + 12, y), r, c.filled()).into_dyn(),
                        Mark::Crosses(r) => {
                            Cross::new((x + 12, y), r, c.stroke_width(3)).into_dyn()
                        }
                    }
                },
            );
        }
    }
    if legend {
        chart
            .configure_series_labels()
            .label_font((FAMILY, LEGEND_SIZE))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(match panel.legend {
                Corner::UpperRight => SeriesLabelPosition::UpperRight,
                Corner::MiddleRight => SeriesLabelPosition::MiddleRight,
                Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
                Corner::LowerRight => SeriesLabelPosition::LowerRight,
                Corner::LowerLeft => SeriesLabelPosition::LowerLeft,
            })
            .draw()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_is_written_with_the_embedded_font() {
        let dir = std::env::temp_dir().join(format!("posecloud-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("test.png");
        let mut lines = Panel::new("title", "x", "y").log_y();
        lines.push(Series::line(
            Some("s".into()),
            vec![(0.0, 1.0), (1.0, 1e-3), (2.0, 0.0)],
            0,
        ));
        let mut drawing = Panel::drawing("drawing", "x", "y");
        drawing.push(Series::line(None, vec![(0.0, 0.0), (1.0, 2.0)], INK));
        let mut shaded = Panel::new("shaded", "x", "y").fixed_y(0.0..3.0);
        shaded.shaded.push(0.5..1.5);
        shaded.push(Series::line(None, vec![(0.0, 1.0), (2.0, 2.0)], 1));
        save_png(&path, &[lines, drawing, shaded], 2, (400, 300)).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fixed_ranges_replace_the_data_bounds() {
        let mut panel = Panel::new("t", "x", "y");
        panel.push(Series::line(None, vec![(1.0, 2.0), (3.0, 4.0)], 0));
        let (x, y) = panel.bounds().unwrap();
        assert!(x.start < 1.0 && x.end > 3.0 && y.start < 2.0 && y.end > 4.0);
        let panel = panel.fixed_x(0.0..10.0).fixed_y(-1.0..1.0);
        assert_eq!(panel.bounds(), Some((0.0..10.0, -1.0..1.0)));
        assert!(
            Panel::new("t", "x", "y")
                .fixed_y(0.0..1.0)
                .bounds()
                .is_none()
        );
    }
}
