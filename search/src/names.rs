//! Tool names: front-coded in the hot records on disk, decoded once into memory at open.
//!
//! Tools are numbered in name order, so a name shares a prefix with the one before it:
//! a catalog's servers namespace their tools (`github_create_issue`, `github_create_pr`), and
//! copies of one tool (`search_r1`, `search_r10`, `search_r11`) sit side by side. Each hot
//! record therefore starts with its name written against the previous tool's (tool 0's against
//! the empty name):
//!
//! ```text
//! shared   varint   bytes of the previous name this one starts with
//! suffix   varint   the length of the rest, then the rest's bytes
//! ```
//!
//! At 100,000 tools (the speed bench's catalog: 14 copies of 6,996 tools) the names took
//! 2.40 MB written whole, each behind its length; front-coded they take 0.55 MB.
//!
//! Reading a name this way needs every name before it, so a search does not: the names are
//! decoded in one pass when the index is opened into [`Names`], one string and one end offset
//! a tool (100,000 tools: 2.3 MB and 0.4 MB, built in a few milliseconds), and every name is
//! then borrowed from there as `&str`, as the API hands them out. The decoded names are checked
//! as they are read: each must be UTF-8, share no more bytes than the previous name has, and
//! sort strictly after it (lookups by name binary-search them); and all of them together may
//! not pass a budget set by the file's size (a crafted file of names that each repeat a long
//! previous one would otherwise decode to far more memory than the file takes).

use crate::error::Damage;
use crate::format::{self, Reader};

/// Appends `name` front-coded against `previous`, the name of the tool before it (empty for
/// the first): the bytes they share at the start as a varint, then the rest as a string
/// behind its varint length.
pub(crate) fn put_coded(out: &mut Vec<u8>, previous: &[u8], name: &[u8]) {
    let shared = previous
        .iter()
        .zip(name)
        .take_while(|(a, b)| a == b)
        .count();
    format::put_varint(out, shared as u32);
    let rest = &name[shared..];
    format::put_varint(out, rest.len() as u32);
    out.extend_from_slice(rest);
}

/// Steps `r` over a front-coded name (see [`put_coded`]).
pub(crate) fn skip_coded(r: &mut Reader<'_>) -> Option<()> {
    r.varint()?;
    let n = r.varint()?;
    r.take(n as usize).map(|_| ())
}

/// Every tool's name, decoded: one string of them back to back, and where each ends.
#[derive(Debug, Default)]
pub(crate) struct Names {
    text: String,
    ends: Vec<u32>,
}

impl Names {
    /// Decodes the names of `tools` tools, tool `i`'s at `offset(i)` of `records` (the hot
    /// records), checking them as described in the module's documentation. `budget` is the
    /// most bytes the names may take decoded.
    pub(crate) fn decode(
        records: &[u8],
        tools: usize,
        offset: impl Fn(usize) -> Option<usize>,
        budget: usize,
    ) -> Result<Names, Damage> {
        let bad = |tool: usize, reason: &'static str| Damage::BadName { tool, reason };
        let mut names = Names {
            text: String::new(),
            ends: Vec::with_capacity(tools),
        };
        let mut start = 0;
        for tool in 0..tools {
            let at = offset(tool).ok_or(bad(tool, "its record lies outside the section"))?;
            let mut r = Reader::new(records, at);
            let shared = r.varint().ok_or(bad(tool, "it runs past the section"))? as usize;
            let len = r.varint().ok_or(bad(tool, "it runs past the section"))? as usize;
            let rest = r.take(len).ok_or(bad(tool, "it runs past the section"))?;
            let previous = &names.text.as_bytes()[start..];
            if shared > previous.len() {
                return Err(bad(tool, "it shares more than the previous name holds"));
            }
            if names.text.len() + shared + rest.len() > budget {
                return Err(bad(
                    tool,
                    "the names are longer in all than the file allows",
                ));
            }
            // The new name, built from the previous one's start and its own rest.
            let mut name = Vec::with_capacity(shared + rest.len());
            name.extend_from_slice(&previous[..shared]);
            name.extend_from_slice(rest);
            let name = std::str::from_utf8(&name).map_err(|_| bad(tool, "it is not UTF-8"))?;
            if name.is_empty() || (tool > 0 && name.as_bytes() <= previous) {
                return Err(bad(tool, "it does not sort after the previous name"));
            }
            start = names.text.len();
            names.text.push_str(name);
            let end = u32::try_from(names.text.len())
                .map_err(|_| bad(tool, "the names are longer in all than the file allows"))?;
            names.ends.push(end);
        }
        Ok(names)
    }

    /// The name of tool `id`.
    #[inline]
    pub(crate) fn get(&self, id: usize) -> Option<&str> {
        let end = *self.ends.get(id)? as usize;
        let start = match id.checked_sub(1) {
            Some(before) => *self.ends.get(before)? as usize,
            None => 0,
        };
        self.text.get(start..end)
    }

    /// The number of the tool called `name` (the names ascend).
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid)?.cmp(name) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `names` front-coded one after the other, and where each starts.
    fn coded(names: &[&str]) -> (Vec<u8>, Vec<usize>) {
        let (mut out, mut starts) = (vec![0xee; 2], Vec::new());
        let mut previous: &[u8] = &[];
        for name in names {
            starts.push(out.len());
            put_coded(&mut out, previous, name.as_bytes());
            // A record's re-ranking words follow its name.
            out.extend_from_slice(&[1, 7]);
            previous = name.as_bytes();
        }
        (out, starts)
    }

    fn decode(out: &[u8], starts: &[usize], budget: usize) -> Result<Names, Damage> {
        Names::decode(out, starts.len(), |i| starts.get(i).copied(), budget)
    }

    #[test]
    fn front_coded_names_read_back_whole_and_are_found_by_name() {
        let names = [
            "a",
            "github_create_issue",
            "github_create_pr",
            "search",
            "search_r1",
            "search_r10",
            "search_r2",
            "zürich_wetter",
            "zürich_ß",
        ];
        let (out, starts) = coded(&names);
        let decoded = decode(&out, &starts, 1 << 20).unwrap();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(decoded.get(i), Some(*name));
            assert_eq!(decoded.find(name), Some(i));
        }
        assert_eq!(decoded.get(names.len()), None);
        assert_eq!(decoded.find("search_r11"), None);
        // "search_r10" after "search_r1": the shared 9 bytes, then "0".
        let at = starts[5];
        assert_eq!(&out[at..at + 3], &[9, 1, b'0']);
        let mut r = Reader::new(&out, at);
        skip_coded(&mut r).unwrap();
        assert_eq!(r.pos, at + 3);
    }

    #[test]
    fn a_name_sharing_more_than_the_previous_holds_is_damage() {
        let (mut out, starts) = coded(&["ab", "abc"]);
        out[starts[1]] = 5;
        assert!(matches!(
            decode(&out, &starts, 1 << 20),
            Err(Damage::BadName { tool: 1, .. })
        ));
    }

    #[test]
    fn names_out_of_order_or_repeated_are_damage() {
        for names in [["b", "a"], ["a", "a"]] {
            let (out, starts) = coded(&names);
            assert!(matches!(
                decode(&out, &starts, 1 << 20),
                Err(Damage::BadName { tool: 1, .. })
            ));
        }
    }

    #[test]
    fn names_that_are_not_utf8_are_damage() {
        let (mut out, starts) = coded(&["a", "é"]);
        // "é" is 2 bytes after a shared 0: cut its first byte's partner.
        out[starts[1] + 3] = b'x';
        assert!(matches!(
            decode(&out, &starts, 1 << 20),
            Err(Damage::BadName { tool: 1, .. })
        ));
    }

    #[test]
    fn names_longer_in_all_than_the_budget_are_damage() {
        let long = "x".repeat(100);
        let names: Vec<String> = (0..20).map(|i| format!("{long}{i:02}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let (out, starts) = coded(&names);
        assert!(decode(&out, &starts, 20 * 102).is_ok());
        assert!(matches!(
            decode(&out, &starts, 20 * 102 - 1),
            Err(Damage::BadName { tool: 19, .. })
        ));
    }

    #[test]
    fn a_record_past_the_section_is_damage() {
        let (out, starts) = coded(&["a", "b"]);
        let starts = [starts[0], out.len() + 3];
        assert!(matches!(
            decode(&out, &starts, 1 << 20),
            Err(Damage::BadName { tool: 1, .. })
        ));
    }
}
