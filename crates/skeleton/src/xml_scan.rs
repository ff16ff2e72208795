//! A small, non-recursive scan of XML text before it reaches `urdf-rs`:
//! element names, attributes and the 1-based line of every attribute value,
//! and a cap on nesting depth. `urdf-rs` parses (and drops) its element tree
//! recursively, so 20,000 nested elements would overflow the stack there;
//! and its errors carry no line numbers, which this scan supplies.
//!
//! The scan is lenient: at the first construct it cannot read it stops and
//! returns what it has, leaving the error to the real parser (which then
//! never sees more nesting than the scan has checked).

/// Deepest element nesting accepted. URDF files nest about 6 levels
/// (`robot > link > visual > geometry > mesh`); extension blocks (`gazebo`,
/// `transmission`) a few more.
pub(crate) const MAX_DEPTH: usize = 100;

/// One attribute of an element.
#[derive(Debug)]
pub(crate) struct Attribute<'a> {
    pub name: &'a str,
    pub value: &'a str,
    /// Line of the value's first character.
    pub line: usize,
}

/// One start (or empty-element) tag.
#[derive(Debug)]
pub(crate) struct Element<'a> {
    pub name: &'a str,
    pub line: usize,
    /// Byte range of the whole element in the text: from its `<` to the end
    /// of its `/>` or of its closing tag (to the end of the start tag while
    /// no closing tag was seen).
    pub span: std::ops::Range<usize>,
    /// Index of the enclosing element in the scan's list.
    pub parent: Option<usize>,
    pub attributes: Vec<Attribute<'a>>,
}

impl Element<'_> {
    pub(crate) fn attribute(&self, name: &str) -> Option<&Attribute<'_>> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

/// Markup that is skipped whole, as `(opening, closing)`: comments, CDATA,
/// processing instructions and declarations (`<!DOCTYPE …>`), the first
/// match winning.
const SKIPPED: [(&[u8], &[u8]); 4] = [
    (b"<!--", b"-->"),
    (b"<![CDATA[", b"]]>"),
    (b"<?", b"?>"),
    (b"<!", b">"),
];

/// Scans `text`; `Err((line, message))` if elements nest deeper than
/// [`MAX_DEPTH`].
pub(crate) fn scan(text: &str) -> Result<Vec<Element<'_>>, (usize, String)> {
    let b = text.as_bytes();
    let mut out: Vec<Element> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut i = 0;
    let mut line = 1;
    // Advances `i` to `to`, counting newlines.
    let advance = |i: &mut usize, line: &mut usize, to: usize| {
        *line += b[*i..to].iter().filter(|&&c| c == b'\n').count();
        *i = to;
    };
    let find = |from: usize, pat: &[u8]| {
        b[from.min(b.len())..]
            .windows(pat.len())
            .position(|w| w == pat)
            .map(|p| from + p)
    };
    while let Some(lt) = find(i, b"<") {
        advance(&mut i, &mut line, lt);
        let rest = &b[i..];
        let skip_to = |pat: &[u8]| find(i, pat).map(|p| p + pat.len());
        if let Some((_, close)) = SKIPPED.iter().find(|(open, _)| rest.starts_with(open)) {
            let Some(end) = skip_to(close) else { break };
            advance(&mut i, &mut line, end);
        } else if rest.starts_with(b"</") {
            let Some(end) = skip_to(b">") else { break };
            if let Some(e) = open.pop() {
                out[e].span.end = end;
            }
            advance(&mut i, &mut line, end);
        } else {
            // A start tag: name, attributes, then `>` or `/>`.
            let tag_line = line;
            let tag_start = i;
            let name_start = i + 1;
            let mut k = name_start;
            while k < b.len() && !matches!(b[k], b' ' | b'\t' | b'\r' | b'\n' | b'/' | b'>') {
                k += 1;
            }
            let name = &text[name_start..k];
            let mut attributes = Vec::new();
            let mut closed = None;
            advance(&mut i, &mut line, k);
            while i < b.len() {
                match b[i] {
                    b' ' | b'\t' | b'\r' | b'\n' => {
                        let to = i + 1;
                        advance(&mut i, &mut line, to)
                    }
                    b'>' => {
                        closed = Some(false);
                        i += 1;
                        break;
                    }
                    b'/' if b.get(i + 1) == Some(&b'>') => {
                        closed = Some(true);
                        i += 2;
                        break;
                    }
                    _ => {
                        let a = i;
                        while i < b.len()
                            && !matches!(b[i], b'=' | b' ' | b'\t' | b'\r' | b'\n' | b'>' | b'/')
                        {
                            i += 1;
                        }
                        let attr_name = &text[a..i];
                        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
                            {
                                let to = i + 1;
                                advance(&mut i, &mut line, to)
                            };
                        }
                        if b.get(i) != Some(&b'=') {
                            break;
                        }
                        {
                            let to = i + 1;
                            advance(&mut i, &mut line, to)
                        };
                        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
                            {
                                let to = i + 1;
                                advance(&mut i, &mut line, to)
                            };
                        }
                        let Some(&quote) = b.get(i).filter(|q| matches!(q, b'"' | b'\'')) else {
                            break;
                        };
                        let v = i + 1;
                        let Some(end) = b[v..].iter().position(|&c| c == quote).map(|p| v + p)
                        else {
                            break;
                        };
                        let value_line = line;
                        advance(&mut i, &mut line, end + 1);
                        attributes.push(Attribute {
                            name: attr_name,
                            value: &text[v..end],
                            line: value_line,
                        });
                    }
                }
            }
            let Some(self_closing) = closed else { break };
            out.push(Element {
                name,
                line: tag_line,
                span: tag_start..i,
                parent: open.last().copied(),
                attributes,
            });
            if !self_closing {
                open.push(out.len() - 1);
                if open.len() > MAX_DEPTH {
                    return Err((
                        tag_line,
                        format!("elements are nested more than {MAX_DEPTH} levels deep"),
                    ));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_names_attributes_and_lines() {
        let text = "<?xml version=\"1.0\"?>\n<!-- a\ncomment -->\n<robot name='r'>\n  <link name=\"a\">\n    <inertial><mass\n value=\"2\"/></inertial>\n  </link>\n</robot>\n";
        let e = scan(text).unwrap();
        let names: Vec<&str> = e.iter().map(|e| e.name).collect();
        assert_eq!(names, ["robot", "link", "inertial", "mass"]);
        assert_eq!(e[0].line, 4);
        assert_eq!(e[1].attribute("name").unwrap().value, "a");
        assert_eq!(e[3].parent, Some(2));
        assert_eq!(e[2].parent, Some(1));
        let v = e[3].attribute("value").unwrap();
        assert_eq!((v.value, v.line), ("2", 7));
        assert_eq!(&text[e[3].span.clone()], "<mass\n value=\"2\"/>");
        assert!(text[e[2].span.clone()].starts_with("<inertial><mass"));
        assert!(text[e[2].span.clone()].ends_with("</inertial>"));
    }

    #[test]
    fn deep_nesting_is_an_error_naming_the_line() {
        let text = "<a>\n".repeat(20_000);
        let (line, m) = scan(&text).unwrap_err();
        assert_eq!(line, MAX_DEPTH + 1);
        assert!(m.contains("nested"), "{m}");
        // Siblings do not add depth.
        let flat = "<r>".to_string() + &"<a></a>".repeat(10_000) + "</r>";
        assert_eq!(scan(&flat).unwrap().len(), 10_001);
    }

    #[test]
    fn malformed_text_stops_the_scan_without_panicking() {
        for t in [
            "<",
            "<a",
            "<a b",
            "<a b=",
            "<a b=\"x",
            "<!--",
            "<a b='1'",
            "<\u{e9}\u{e9} x='\u{e9}'/>",
        ] {
            let _ = scan(t);
        }
    }
}
