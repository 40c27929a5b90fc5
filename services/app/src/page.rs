//! Pages of a list: opaque cursors, bounded limits.

use crate::AppError;

/// A page of a list, with the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// How much of a list to answer.
#[derive(Debug, Clone, Default)]
pub struct PageRequest {
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    pub limit: Option<u32>,
}

pub const DEFAULT_PAGE: usize = 50;
pub const MAX_PAGE: usize = 200;

impl PageRequest {
    /// Pages a list sorted by `key`: cursors are opaque (hex of the last
    /// key), so a client cannot build one that skips a check.
    pub fn apply<T>(&self, items: Vec<T>, key: impl Fn(&T) -> &str) -> Result<Page<T>, AppError> {
        let limit = match self.limit {
            None => DEFAULT_PAGE,
            Some(n) if (1..=MAX_PAGE as u32).contains(&n) => n as usize,
            Some(n) => {
                return Err(AppError::invalid(
                    "limit",
                    format!("must be between 1 and {MAX_PAGE}, got {n}"),
                ));
            }
        };
        let after = match &self.cursor {
            None => None,
            Some(c) => Some(
                hex::decode(c)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| AppError::invalid("cursor", "is not a cursor this API gave"))?,
            ),
        };
        let mut rest: Vec<T> = items
            .into_iter()
            .filter(|i| after.as_deref().is_none_or(|a| key(i) > a))
            .collect();
        let more = rest.len() > limit;
        rest.truncate(limit);
        let next_cursor = if more {
            rest.last().map(|l| hex::encode(key(l)))
        } else {
            None
        };
        Ok(Page {
            items: rest,
            next_cursor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_each_other_without_gaps() {
        let items: Vec<String> = (0..7).map(|i| format!("k{i}")).collect();
        let mut request = PageRequest {
            cursor: None,
            limit: Some(3),
        };
        let mut seen = Vec::new();
        loop {
            let page = request.apply(items.clone(), |s| s.as_str()).unwrap();
            seen.extend(page.items);
            match page.next_cursor {
                Some(c) => request.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, items);
        assert!(
            PageRequest {
                cursor: Some("zz".into()),
                limit: None
            }
            .apply(items.clone(), |s| s.as_str())
            .is_err()
        );
        assert!(
            PageRequest {
                cursor: None,
                limit: Some(0)
            }
            .apply(items, |s| s.as_str())
            .is_err()
        );
    }
}
