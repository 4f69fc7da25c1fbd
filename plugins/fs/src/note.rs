//! Notes appended to a tool's text.

/// Appends a note on its own line.
pub(crate) fn push_note(text: &mut String, note: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(note);
}
