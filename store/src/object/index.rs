//! The character index that makes a page cost time in proportion to the page.

/// Characters between two entries of the character index.
///
/// Smaller means less data read per page and a bigger index: 4096 gives at most ~32 KiB of extra reading
/// per page and an index of 0.2% of an ASCII result.
pub const INDEX_STRIDE_CHARS: u64 = 4096;

/// Counts the characters of `text` and builds its index: the byte offset of every `stride`-th character,
/// from character 0 up to and including character `chars` when it falls on the stride.
pub(super) fn char_index(text: &str, stride: u64) -> (u64, Vec<u64>) {
    let mut index = Vec::with_capacity(text.len() / stride as usize + 1);
    index.push(0);
    let mut chars: u64 = 0;
    let mut next = stride;
    for (at, &b) in text.as_bytes().iter().enumerate() {
        // Every byte that is not a UTF-8 continuation byte (0b10xx_xxxx) starts a character.
        if b & 0xC0 != 0x80 {
            if chars == next {
                index.push(at as u64);
                next += stride;
            }
            chars += 1;
        }
    }
    if chars == next {
        index.push(text.len() as u64);
    }
    (chars, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_marks_every_stride_th_character_and_the_end_when_it_falls_on_the_stride() {
        let text = "aé中😀"; // 1 + 2 + 3 + 4 bytes
        assert_eq!(char_index(text, 1), (4, vec![0, 1, 3, 6, 10]));
        assert_eq!(char_index(text, 2), (4, vec![0, 3, 10]));
        assert_eq!(char_index(text, 3), (4, vec![0, 6]));
        assert_eq!(char_index("", 3), (0, vec![0]));
    }
}
