use super::*;

fn decode(bytes: &[u8], offset: usize) -> Result<Vec<(u32, u16)>, BlockError> {
    let list = PostingList::new(bytes, offset);
    let mut blocks = list.blocks();
    let mut block = Block::new();
    let mut out = Vec::new();
    while blocks.next_into(&mut block)? {
        out.extend((0..block.len).map(|i| (block.docs[i], block.impact_with_name(i))));
    }
    Ok(out)
}

fn encode(list: &[(u32, u16)]) -> Vec<u8> {
    let mut buf = Vec::new();
    put_postings(&mut buf, list);
    buf
}

#[test]
fn postings_round_trip_with_name_bits_and_extreme_values() {
    let list = [
        (0, 1),
        (7, 0x7fff | NAME_BIT),
        (300_000, 12),
        (u32::MAX - 1, 0),
        (u32::MAX, NAME_BIT),
    ];
    let mut buf = vec![9u8];
    put_postings(&mut buf, &list);
    assert_eq!(PostingList::new(&buf, 1).len(), 5);
    assert_eq!(decode(&buf, 1).unwrap(), list);
}

#[test]
fn lists_longer_than_a_block_round_trip() {
    for len in [127, 128, 129, 256, 1000] {
        let list: Vec<(u32, u16)> = (0..len)
            .map(|i| {
                (
                    i * 8 + (i % 7),
                    ((i as u16 * 37) % 0x7fff) | (u16::from(i % 5 == 0) << 15),
                )
            })
            .collect();
        assert_eq!(decode(&encode(&list), 0).unwrap(), list, "len {len}");
    }
}

#[test]
fn dense_lists_take_under_three_bytes_an_entry() {
    let list: Vec<(u32, u16)> = (0..1000)
        .map(|i| (i * 2, 1000 + (i as u16 % 200)))
        .collect();
    assert!(
        encode(&list).len() < 3 * list.len(),
        "{}",
        encode(&list).len()
    );
}

#[test]
fn blocks_consume_exactly_the_bytes_written() {
    let list: Vec<(u32, u16)> = (0..300).map(|i| (i * 5, i as u16)).collect();
    let buf = encode(&list);
    let mut tail = buf.clone();
    tail.extend_from_slice(&[0xff; 16]);
    let l = PostingList::new(&tail, 0);
    let mut blocks = l.blocks();
    let mut block = Block::new();
    while blocks.next_into(&mut block).unwrap() {}
    // The count of 300 takes two bytes.
    assert_eq!(blocks.consumed() + 2, buf.len());
}

#[test]
fn truncated_lists_fail_to_decode_without_panicking() {
    let list: Vec<(u32, u16)> = (0..200).map(|i| (i * 9, i as u16 | NAME_BIT)).collect();
    let buf = encode(&list);
    for cut in 0..buf.len() {
        let got = decode(&buf[..cut], 0);
        assert!(
            got.is_err() || PostingList::new(&buf[..cut], 0).len() == 0,
            "cut at {cut}"
        );
    }
    assert_eq!(PostingList::new(&buf, usize::MAX).len(), 0);
}

#[test]
fn a_block_wider_than_32_bits_is_refused() {
    let mut buf = encode(&[(5, 1), (6, 1)]);
    buf[1] = 33;
    assert_eq!(decode(&buf, 0), Err(BlockError::Width));
}

#[test]
fn impacts_that_are_multiples_of_128_take_a_byte_each() {
    // 128 entries one apart (gaps of 0 bits), impacts of all 256 levels but the top half.
    let list: Vec<(u32, u16)> = (0..128).map(|i| (i, (i as u16) * 2 * 128)).collect();
    let buf = encode(&list);
    // The count (2 bytes), the header (4), no gap bits, 128 impacts of 8 bits.
    assert_eq!(buf.len(), 2 + 4 + 128);
    assert_eq!(decode(&buf, 0).unwrap(), list);
}

#[test]
fn a_shift_lifting_an_impact_past_the_largest_is_refused() {
    // 32764 - 0 has two low zero bits: the block's shift is 2, its width 13.
    let mut buf = encode(&[(1, 0), (2, 32764)]);
    assert_eq!(buf[2] & 0x70, 2 << 4);
    buf[2] = (buf[2] & !0x70) | (3 << 4);
    assert_eq!(decode(&buf, 0), Err(BlockError::ImpactOverflow));
}

#[test]
fn tool_numbers_past_u32_max_are_refused() {
    // Two entries: the first at u32::MAX, so the second cannot follow it.
    let mut buf = encode(&[(u32::MAX - 1, 1), (u32::MAX, 1)]);
    // Raise the first gap by one (bit 0 of the packed gaps, after count and 4 header bytes).
    buf[5] |= 1;
    assert_eq!(decode(&buf, 0), Err(BlockError::DocOverflow));
}

#[test]
fn impacts_past_the_largest_are_refused() {
    let mut buf = encode(&[(1, 0x7fff), (2, 0x7fff)]);
    // The base impact's bytes: 0x7fff -> 0xffff.
    buf[4] = 0xff;
    assert_eq!(decode(&buf, 0), Err(BlockError::ImpactOverflow));
}

#[test]
fn impacts_of_a_block_whose_width_allows_more_than_the_largest_round_trip() {
    // Base 20000 and 15 bits: the width alone would allow impacts up to 52767.
    let list: Vec<(u32, u16)> = (0..200)
        .map(|i| (i * 3, 20_000 + (i as u16 * 61) % 12_767))
        .collect();
    assert_eq!(decode(&encode(&list), 0).unwrap(), list);
}

#[test]
fn a_whole_block_past_u32_max_is_refused() {
    // 128 entries, the last at u32::MAX: each gap is 0 but the first.
    let start = u32::MAX - 127;
    let list: Vec<(u32, u16)> = (0..128).map(|i| (start + i, 1)).collect();
    let mut buf = encode(&list);
    assert_eq!(decode(&buf, 0).unwrap(), list);
    // The gaps are 32 bits wide (the first is `start`): raise the last gap by one.
    let last_gap = 2 + 4 + 127 * 4;
    buf[last_gap] |= 1;
    assert_eq!(decode(&buf, 0), Err(BlockError::DocOverflow));
}

#[test]
fn a_list_of_one_takes_its_count_tool_number_and_impact_only() {
    let list = [(300_000, 0x1234 | NAME_BIT)];
    let buf = encode(&list);
    // The count (1 byte), the tool number (3 bytes), the impact (2 bytes).
    assert_eq!(buf.len(), 1 + 3 + 2);
    assert_eq!(decode(&buf, 0).unwrap(), list);
}

#[test]
fn a_list_of_one_cut_short_is_an_overrun() {
    let buf = encode(&[(300_000, 7)]);
    for cut in 1..buf.len() {
        assert_eq!(
            decode(&buf[..cut], 0),
            Err(BlockError::Overrun),
            "cut at {cut}"
        );
    }
}

/// A list of `128 + n` entries written by hand: two blocks whose gaps are `width` bits wide,
/// the second of `n` entries, with packed bytes from `seed` (any bits, so tool numbers and
/// impacts may overflow: the two decoders must then fail alike), then `tail` bytes more.
fn two_blocks(width: u8, n: usize, flags: u8, base: u16, seed: u64, tail: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    put_varint(&mut buf, (BLOCK + n) as u32);
    let mut state = seed | 1;
    let mut byte = || {
        // xorshift64
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u8
    };
    for len in [BLOCK, n] {
        buf.extend_from_slice(&[width, flags]);
        buf.extend_from_slice(&base.to_le_bytes());
        let impact_bits = usize::from(flags & WIDTH_MASK);
        let names = usize::from(flags & NAMES_FLAG != 0);
        let bytes = (len * usize::from(width)).div_ceil(8)
            + (len * impact_bits).div_ceil(8)
            + names * len.div_ceil(8);
        buf.extend((0..bytes).map(|_| byte()));
    }
    buf.extend((0..tail).map(|_| byte()));
    buf
}

/// The entries of the list at the start of `bytes`, by the given decoder.
fn decode_with(bytes: &[u8], simd: bool) -> Result<Vec<(u32, u16)>, BlockError> {
    if simd {
        decode(bytes, 0)
    } else {
        crate::simd::scalar_only(|| decode(bytes, 0))
    }
}

#[test]
fn simd_and_scalar_decode_agree_for_every_width_and_block_length() {
    // On a CPU without AVX2 both are the scalar decoder; this project's machines have it.
    for width in 0..=32u8 {
        for n in 1..=BLOCK {
            let seed = u64::from(width) << 8 | n as u64;
            // Impact widths and shifts of every kind, with and without name bits; a base
            // that leaves the fast (unchecked) impact path to most blocks.
            let impact_bits = (width + n as u8) % 16;
            let shift = (n as u8 % 8).min(15 - impact_bits);
            let flags = impact_bits | shift << SHIFT_AT | if n % 3 == 0 { NAMES_FLAG } else { 0 };
            let base = (n * 7) as u16;
            // At the section's end (the padded copy) and well within it.
            for tail in [0, 40] {
                let bytes = two_blocks(width, n, flags, base, seed, tail);
                assert_eq!(
                    decode_with(&bytes, true),
                    decode_with(&bytes, false),
                    "width {width}, length {n}, tail {tail}"
                );
            }
        }
    }
}

#[test]
fn simd_decode_of_narrow_gaps_gives_the_tool_numbers_written() {
    // Gaps of up to 24 bits (the kernels' widest), over two blocks and a part.
    for width in [1u32, 5, 13, 17, 24] {
        let mut doc = 0u32;
        let list: Vec<(u32, u16)> = (0..200u32)
            .map(|i| {
                doc += 2_654_435_761u32.wrapping_mul(i + 1) % (1 << width) + 1;
                (doc, (i as u16 * 129) % 0x7fff)
            })
            .collect();
        assert_eq!(
            decode_with(&encode(&list), true).unwrap(),
            list,
            "width {width}"
        );
    }
}

proptest::proptest! {
    #[test]
    fn simd_and_scalar_decode_agree_on_arbitrary_blocks(
        width in 0..=32u8,
        n in 1..=BLOCK,
        flags in proptest::prelude::any::<u8>(),
        base in proptest::prelude::any::<u16>(),
        seed in proptest::prelude::any::<u64>(),
        tail in 0..40usize,
    ) {
        let bytes = two_blocks(width, n, flags, base, seed, tail);
        proptest::prop_assert_eq!(decode_with(&bytes, true), decode_with(&bytes, false));
    }
}
