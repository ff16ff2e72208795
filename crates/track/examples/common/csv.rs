//! A small CSV reader shared by the footage examples (`session_eval`,
//! `keypoint_bias`): a header index and rows of strings.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result};

/// A CSV as a header index and rows of strings.
pub(crate) struct Csv {
    pub columns: HashMap<String, usize>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut lines = text.lines();
        let header = lines.next().context("empty CSV")?;
        let columns = header
            .split(',')
            .enumerate()
            .map(|(i, c)| (c.to_string(), i))
            .collect();
        let rows = lines
            .map(|l| l.split(',').map(String::from).collect())
            .collect();
        Ok(Self { columns, rows })
    }

    pub(crate) fn get(&self, row: &[String], column: &str) -> Option<f64> {
        self.columns
            .get(column)
            .and_then(|&i| row.get(i))
            .and_then(|v| v.parse().ok())
    }

    pub(crate) fn text<'a>(&self, row: &'a [String], column: &str) -> Option<&'a str> {
        self.columns
            .get(column)
            .and_then(|&i| row.get(i))
            .map(String::as_str)
    }
}
