//! Helpers shared by the examples: CSV output ([`Csv`]) and small number
//! formats, so that every example can write what it measured with
//! `--csv FILE`; PNG figures (`--png FILE`) are drawn with `plotkit`.

use std::fmt::Display;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// A CSV table built row by row, written in one go.
///
/// Fields that contain a comma, a quote or a line break are quoted (RFC 4180).
#[derive(Clone, Debug)]
pub struct Csv {
    columns: usize,
    text: String,
}

impl Csv {
    /// A table with this header row.
    pub fn new(header: &[&str]) -> Self {
        let mut csv = Self {
            columns: header.len(),
            text: String::new(),
        };
        csv.push_line(header.iter());
        csv
    }

    /// Appends one row; it must have as many fields as the header.
    pub fn row<I>(&mut self, fields: I) -> Result<()>
    where
        I: IntoIterator,
        I::Item: Display,
    {
        let fields: Vec<String> = fields.into_iter().map(|f| f.to_string()).collect();
        if fields.len() != self.columns {
            bail!(
                "CSV row has {} fields, the header has {}",
                fields.len(),
                self.columns
            );
        }
        self.push_line(fields.iter());
        Ok(())
    }

    fn push_line<I: Iterator<Item = T>, T: Display>(&mut self, fields: I) {
        for (i, f) in fields.enumerate() {
            if i > 0 {
                self.text.push(',');
            }
            let f = f.to_string();
            if f.contains([',', '"', '\n', '\r']) {
                self.text.push('"');
                self.text.push_str(&f.replace('"', "\"\""));
                self.text.push('"');
            } else {
                self.text.push_str(&f);
            }
        }
        self.text.push('\n');
    }

    /// The table as text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Writes the table to `path`.
    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, &self.text).with_context(|| format!("writing {}", path.display()))
    }
}

/// The median of `values` (the mean of the two middle values for an even
/// count); `None` when empty. NaNs sort last.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    })
}

/// `v` in scientific notation with `digits` decimals and a signed
/// two-digit exponent (`2.87e+00`, `9.85e-01`), so columns line up.
pub fn sci(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let s = format!("{v:.digits$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

/// Parses `x,y,z` into three finite numbers (for target options).
pub fn parse_point(s: &str) -> std::result::Result<[f64; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err(format!(
            "expected x,y,z (three comma-separated numbers), got '{s}'"
        ));
    }
    let mut p = [0.0; 3];
    for (o, part) in p.iter_mut().zip(&parts) {
        *o = part
            .parse::<f64>()
            .map_err(|e| format!("'{part}' in '{s}': {e}"))?;
        if !o.is_finite() {
            return Err(format!("'{part}' in '{s}' is not finite"));
        }
    }
    Ok(p)
}

/// Checks command-line values that must be finite and positive; the error
/// names the first offending option.
pub fn require_positive(values: &[(&str, f64)]) -> Result<()> {
    for &(name, v) in values {
        if !(v > 0.0 && v.is_finite()) {
            bail!("{name} must be positive, got {v}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_fields_and_checks_widths() {
        let mut csv = Csv::new(&["a", "b"]);
        csv.row(["1", "x,y"]).unwrap();
        csv.row(["say \"hi\"", "2"]).unwrap();
        assert_eq!(csv.as_str(), "a,b\n1,\"x,y\"\n\"say \"\"hi\"\"\",2\n");
        assert!(csv.row(["only one"]).is_err());
    }

    #[test]
    fn median_and_sci() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(sci(2.872, 2), "2.87e+00");
        assert_eq!(sci(0.000985, 2), "9.85e-04");
        assert_eq!(sci(-1.5e12, 1), "-1.5e+12");
    }

    #[test]
    fn parse_point_accepts_three_numbers_only() {
        assert_eq!(parse_point("1, 2.5,-3").unwrap(), [1.0, 2.5, -3.0]);
        assert!(parse_point("1,2").is_err());
        assert!(parse_point("1,2,x").is_err());
        assert!(parse_point("1,2,inf").is_err());
    }
}
