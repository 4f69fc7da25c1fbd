//! Pages of the lists `serve` answers (`tools/list`; `resources/list`,
//! `resources/templates/list` and `prompts/list` use the same helper).
//!
//! A list is cut into pages of at most `page_size` items (the policy's `serve.page_size`), in the order of each item's key (a
//! tool's name, a resource's URI, a template's URI template, a prompt's name). A page that is
//! not the last one carries a `nextCursor`; the client sends it back to get the next page.
//!
//! # The cursor
//!
//! Opaque to clients: the list it belongs to and the key of the last item given, hex-encoded
//! behind a version mark. It holds no offset, so a list that changes between two pages (a
//! reload, a tool found by `tool_search`) goes on after the last item the client saw: nothing
//! the client has not seen is skipped, and nothing it has seen comes again. (An item added
//! before that point is in no page; the client is told the list changed and lists again.)
//!
//! A cursor that this server did not make, or that was made for another list, is refused with
//! `-32602` (invalid params) and a message that says to list again without a cursor. It grants
//! nothing: what a page shows is filtered for the session before it is cut.

use std::num::NonZeroUsize;

use rmcp::ErrorData as McpError;
use rmcp::model::PaginatedRequestParams;

/// What every cursor starts with: the version of its layout.
const VERSION: &str = "tg1.";

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page<T> {
    /// The items of this page, in key order.
    pub(crate) items: Vec<T>,
    /// The cursor of the next page; `None` on the last page.
    pub(crate) next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// The same page with each item made into something else (the protocol's type).
    pub(crate) fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

/// The page of `items` that `request`'s cursor asks for (the first page without one), at most
/// `page_size` items, in the order of `key`. `list` names the list (`tools`, `resources`, ...)
/// so that a cursor of one list is refused by another.
///
/// Items whose keys are equal are never split across two pages (a page may then hold a few
/// more than `page_size`); keys should be unique in any case.
///
/// # Errors
///
/// `-32602` (invalid params) for a cursor this server did not make for `list`.
pub(crate) fn page<T, K>(
    list: &str,
    mut items: Vec<T>,
    request: Option<&PaginatedRequestParams>,
    page_size: NonZeroUsize,
    key: K,
) -> Result<Page<T>, McpError>
where
    K: Fn(&T) -> &str,
{
    let after = match request.and_then(|r| r.cursor.as_deref()) {
        Some(cursor) => Some(decode(list, cursor)?),
        None => None,
    };
    items.sort_by(|a, b| key(a).cmp(key(b)));
    let start = match &after {
        Some(after) => items.partition_point(|item| key(item) <= after.as_str()),
        None => 0,
    };
    let mut end = start.saturating_add(page_size.get()).min(items.len());
    // Keep items of one key together: the cursor says "after this key".
    if end > start && end < items.len() {
        let last = key(&items[end - 1]).to_owned();
        end += items[end..]
            .iter()
            .take_while(|item| key(item) == last)
            .count();
    }
    let next_cursor =
        (end < items.len() && end > start).then(|| encode(list, key(&items[end - 1])));
    items.truncate(end);
    let items = items.split_off(start);
    Ok(Page { items, next_cursor })
}

/// The cursor of the page after the item with `key` in `list`.
fn encode(list: &str, key: &str) -> String {
    let mut cursor = String::with_capacity(VERSION.len() + 2 * (list.len() + 1 + key.len()));
    cursor.push_str(VERSION);
    for byte in list.bytes().chain([0]).chain(key.bytes()) {
        cursor.push(hex_digit(byte >> 4));
        cursor.push(hex_digit(byte & 0xf));
    }
    cursor
}

/// The key a cursor of `list` goes on after.
fn decode(list: &str, cursor: &str) -> Result<String, McpError> {
    let refuse = |why: &str| {
        McpError::invalid_params(
            format!(
                "bad cursor for {list}/list: {why}; send the nextCursor of the previous page as \
                 it was given, or list again from the start without a cursor"
            ),
            None,
        )
    };
    let hex = cursor
        .strip_prefix(VERSION)
        .ok_or_else(|| refuse("this server did not make it"))?;
    if hex.len() % 2 != 0 {
        return Err(refuse("this server did not make it"));
    }
    let bytes = hex
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| Some(hex_value(pair[0])? << 4 | hex_value(pair[1])?))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| refuse("this server did not make it"))?;
    let text = String::from_utf8(bytes).map_err(|_| refuse("this server did not make it"))?;
    let (named, key) = text
        .split_once('\0')
        .ok_or_else(|| refuse("this server did not make it"))?;
    if named != list {
        return Err(refuse(&format!("it belongs to {named}/list")));
    }
    Ok(key.to_owned())
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0xf)])
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    fn request(cursor: Option<String>) -> PaginatedRequestParams {
        PaginatedRequestParams::default().with_cursor(cursor)
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("tool_{i:03}")).collect()
    }

    /// Every page of `items`, following the cursors.
    fn all_pages(items: &[String], page_size: usize) -> Vec<Vec<String>> {
        let mut pages = Vec::new();
        let mut cursor = None;
        loop {
            let page = page(
                "tools",
                items.to_vec(),
                Some(&request(cursor)),
                size(page_size),
                String::as_str,
            )
            .unwrap();
            pages.push(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return pages,
            }
        }
    }

    #[test]
    fn pages_hold_at_most_the_page_size_and_cover_the_list_once_in_order() {
        let items = names(25);
        let pages = all_pages(&items, 10);
        assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [10, 10, 5]);
        assert_eq!(pages.concat(), items);
    }

    #[test]
    fn a_list_that_fits_is_one_page_without_a_cursor() {
        let got = page("tools", names(3), None, size(10), String::as_str).unwrap();
        assert_eq!(got.items.len(), 3);
        assert_eq!(got.next_cursor, None);
        let exact = page("tools", names(10), None, size(10), String::as_str).unwrap();
        assert_eq!(exact.next_cursor, None, "no empty page after a full one");
        let empty = page(
            "tools",
            Vec::<String>::new(),
            None,
            size(10),
            String::as_str,
        )
        .unwrap();
        assert!(empty.items.is_empty() && empty.next_cursor.is_none());
    }

    #[test]
    fn a_change_between_pages_neither_repeats_nor_skips_what_follows() {
        let items = names(6);
        let first = page("tools", items.clone(), None, size(3), String::as_str).unwrap();
        assert_eq!(first.items, &items[..3]);
        // tool_001 goes away and tool_000a comes: the next page still starts after tool_002.
        let mut changed: Vec<String> = items.iter().filter(|n| *n != "tool_001").cloned().collect();
        changed.push("tool_000a".to_owned());
        let second = page(
            "tools",
            changed,
            Some(&request(first.next_cursor)),
            size(3),
            String::as_str,
        )
        .unwrap();
        assert_eq!(second.items, &items[3..]);
        assert_eq!(second.next_cursor, None);
    }

    #[test]
    fn items_of_one_key_stay_on_one_page() {
        let items: Vec<String> = ["a", "b", "b", "b", "c"].map(str::to_owned).to_vec();
        let pages = all_pages(&items, 2);
        assert_eq!(pages, [vec!["a", "b", "b", "b"], vec!["c"]]);
    }

    #[test]
    fn a_cursor_this_server_did_not_make_is_invalid_params() {
        for bogus in [
            "",
            "abc",
            "tg1.",
            "tg1.zz",
            "tg1.746f6f6c73",
            "tg1.0",
            "tg2.746f6f6c73007a",
        ] {
            let err = page(
                "tools",
                names(3),
                Some(&request(Some(bogus.to_owned()))),
                size(2),
                String::as_str,
            )
            .unwrap_err();
            assert_eq!(
                err.code,
                rmcp::model::ErrorCode::INVALID_PARAMS,
                "{bogus:?}"
            );
            assert!(err.message.contains("bad cursor for tools/list"), "{err:?}");
        }
    }

    #[test]
    fn a_cursor_of_another_list_is_refused() {
        let resources = page("resources", names(5), None, size(2), String::as_str).unwrap();
        let err = page(
            "tools",
            names(5),
            Some(&request(resources.next_cursor)),
            size(2),
            String::as_str,
        )
        .unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("belongs to resources/list"), "{err:?}");
    }

    #[test]
    fn a_cursor_round_trips_any_key() {
        for key in ["", "fs.read_file", "file:///tmp/a b/ü\u{1F600}", "x\0y"] {
            assert_eq!(decode("resources", &encode("resources", key)).unwrap(), key);
        }
    }
}
