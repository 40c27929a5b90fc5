//! Pages of a list: opaque cursors over a unique key, bounded limits; the
//! page itself is cut in SQL (`slaproof_store::Keyset`).

use slaproof_store::Keyset;

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

pub const DEFAULT_PAGE: u32 = 50;
pub const MAX_PAGE: u32 = 200;

/// The cursor that pages on after the item with `key`: opaque (hex of the
/// key), so that clients treat it as a token rather than build one.
pub fn cursor_of(key: &str) -> String {
    hex::encode(key)
}

impl PageRequest {
    /// The rows to read: after the cursor's key, at most the limit.
    pub fn keyset(&self) -> Result<Keyset, AppError> {
        let limit = match self.limit {
            None => DEFAULT_PAGE,
            Some(n) if (1..=MAX_PAGE).contains(&n) => n,
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
                    // Keys never hold NUL, and Postgres text cannot: a
                    // cursor decoding to one was not given by this API.
                    .filter(|key| !key.contains('\0'))
                    .ok_or_else(|| AppError::invalid("cursor", "is not a cursor this API gave"))?,
            ),
        };
        Ok(Keyset { after, limit })
    }
}

impl<T> Page<T> {
    /// The page of `rows` read for `keyset` (up to one row past the page),
    /// ordered by the unique `key`.
    pub fn of(mut rows: Vec<T>, keyset: &Keyset, key: impl Fn(&T) -> &str) -> Self {
        let limit = keyset.limit as usize;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = if more {
            rows.last().map(|last| cursor_of(key(last)))
        } else {
            None
        };
        Page {
            items: rows,
            next_cursor,
        }
    }

    /// The same page with each item mapped.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages over a sorted list as SQL would read them.
    fn read(all: &[String], keyset: &Keyset) -> Vec<String> {
        all.iter()
            .filter(|k| keyset.after.as_deref().is_none_or(|a| k.as_str() > a))
            .take(usize::try_from(keyset.fetch()).unwrap())
            .cloned()
            .collect()
    }

    #[test]
    fn pages_follow_each_other_without_gaps() {
        let items: Vec<String> = (0..7).map(|i| format!("k{i}")).collect();
        let mut request = PageRequest {
            cursor: None,
            limit: Some(3),
        };
        let mut seen = Vec::new();
        loop {
            let keyset = request.keyset().unwrap();
            let page = Page::of(read(&items, &keyset), &keyset, |s| s.as_str());
            seen.extend(page.items);
            match page.next_cursor {
                Some(c) => request.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, items);
    }

    #[test]
    fn bad_cursors_and_limits_are_refused_naming_the_parameter() {
        let field = |r: PageRequest| match r.keyset() {
            Err(AppError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let bad_cursor = PageRequest {
            cursor: Some("zz".into()),
            limit: None,
        };
        assert_eq!(field(bad_cursor), "cursor");
        // Found in review: a cursor decoding to NUL reached Postgres (500).
        let nul = PageRequest {
            cursor: Some(cursor_of("a\0b")),
            limit: None,
        };
        assert_eq!(field(nul), "cursor");
        for limit in [0, MAX_PAGE + 1] {
            let bad_limit = PageRequest {
                cursor: None,
                limit: Some(limit),
            };
            assert_eq!(field(bad_limit), "limit");
        }
    }
}
