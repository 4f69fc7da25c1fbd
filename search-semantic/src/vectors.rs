//! Tool vectors: one vector per tool, in tool-number order, computed at index build and stored
//! in a file beside the index, and the nearest-neighbour search over them.
//!
//! Similarity is the cosine after subtracting the mean tool vector from both sides: a static
//! model's sentence vectors share a large common component (every text has common words),
//! which would otherwise put every cosine near the same value. A transformer's vectors are
//! stored with a zero mean ([`ToolVectors::uncentred`]): their cosines are the plain ones.
//! Each tool's centred unit vector is kept quantised to 8 bits (each component times `127 /
//! its largest magnitude`), with that row's scale: a quarter of the floats' size, and cosines
//! within about 0.01 of the exact ones.
//!
//! # File format (version 4, little-endian)
//!
//! Version 4 adds each tool's content hash and centred length, so that a rebuild reuses the
//! vector of every tool whose text did not change ([`ToolVectors::raw`]) and embeds only the
//! others; a version 3 file is refused and the vectors computed again.
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `TGVECS\0\x01` |
//! | 4 | format version (4) |
//! | 4 | dimensions `d` |
//! | 4 | tools `n` |
//! | 4 | zero |
//! | 8 | model id ([`crate::EmbeddingModel::id`]) |
//! | 8 | tools id: the xxh3 hash of the tool names in tool-number order |
//! | 8 | checksum of every other byte (xxh3) |
//! | `4 d` | the mean tool vector, float32 |
//! | `4 n` | each tool's scale, float32 (0 for a tool with no known word) |
//! | `4 n` | each tool's length after centring, before it was scaled to unit length, float32 |
//! | `8 n` | each tool's content hash: the xxh3 hash of the text embedded for it |
//! | `n d` | each tool's centred unit vector divided by its scale, int8 |
//!
//! # Search
//!
//! Up to [`EXACT_UP_TO`] tools every cosine is computed. Beyond, each vector also has a sign
//! sketch (one bit per dimension): the query's sketch picks the [`RESCORE`] tools at the
//! smallest Hamming distance, and only those are scored exactly. At 100,000 tools of 256
//! dimensions the sketches are 3.2 MB and the int8 rows 25.6 MB. The kernels (AVX-512 distances,
//! the sampled cut, AVX2 rescoring, each with a portable twin giving the same bits) are in
//! `scan.rs`; reading the 3.2 MB of sketches from memory is about half of a search's time.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::error::SemanticError;
use crate::fuse::{by_rank, keep_best};
use crate::model::normalize;
use crate::scan::{self, Kernels};

const MAGIC: &[u8; 8] = b"TGVECS\0\x01";
const VERSION: u32 = 4;
const HEADER: usize = 48;
const CHECKSUM_AT: usize = 40;

/// Catalogs up to this size are searched exactly.
pub const EXACT_UP_TO: usize = 8192;
/// Beyond [`EXACT_UP_TO`], how many tools the sketches pass on to exact scoring.
pub const RESCORE: usize = 1024;

/// The vectors of an index's tools.
#[derive(Clone)]
pub struct ToolVectors {
    dims: usize,
    model_id: u64,
    tools_id: u64,
    /// The mean of the tools' unit vectors.
    mean: Vec<f32>,
    /// Per tool: its row's scale (0 for a tool with no vector).
    scales: Vec<f32>,
    /// Per tool: the length of its vector minus `mean`, before scaling to unit length.
    norms: Vec<f32>,
    /// Per tool: the hash of the text its vector was computed from.
    hashes: Vec<u64>,
    /// `n * dims`: each tool's vector minus `mean`, scaled to unit length, divided by its scale
    /// and rounded.
    rows: Vec<i8>,
    /// The sign sketches of `rows` in blocks of [`scan::LANES`] tools (empty when the catalog
    /// is searched exactly).
    sketches: Vec<u64>,
    /// The kernels this CPU runs.
    kernels: Kernels,
}

/// What one search over the sketches works in, kept between the searches of a thread so that
/// none allocates (and clears) a distance for each tool. Bounded by the largest catalog the
/// thread searched: 2 bytes a tool for the distances (200 kB at 100,000 tools), usually a few
/// thousand gathered tools and the candidates, at most 4 bytes a tool each (all tools at one
/// distance).
#[derive(Default)]
struct Scratch {
    dist: Vec<u16>,
    work: Vec<u32>,
    candidates: Vec<u32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

impl std::fmt::Debug for ToolVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolVectors")
            .field("tools", &self.len())
            .field("dims", &self.dims)
            .finish()
    }
}

/// A checksum of tool names in order, to match a vectors file with its index.
pub(crate) fn tools_id<'a>(names: impl Iterator<Item = &'a str>) -> u64 {
    let mut joined = Vec::new();
    for n in names {
        joined.extend_from_slice(n.as_bytes());
        joined.push(0);
    }
    xxhash_rust::xxh3::xxh3_64(&joined)
}

/// The checksum of a vectors file's parts.
fn checksum(parts: &[&[u8]]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in parts {
        h.update(p);
    }
    h.digest()
}

impl ToolVectors {
    /// Vectors from `data` (`n * dims` floats, each row unit length or zero) computed from
    /// texts of hashes `hashes` (one a tool), compared by their cosines once centred on their
    /// mean (a static model's).
    pub fn new(
        dims: usize,
        model_id: u64,
        tools_id: u64,
        data: Vec<f32>,
        hashes: Vec<u64>,
    ) -> ToolVectors {
        ToolVectors::build(dims, model_id, tools_id, data, hashes, true)
    }

    /// [`ToolVectors::new`] without centring: the stored mean is zero, so cosines are the
    /// plain ones (a transformer's; see `EmbeddingModel::centres`).
    pub fn uncentred(
        dims: usize,
        model_id: u64,
        tools_id: u64,
        data: Vec<f32>,
        hashes: Vec<u64>,
    ) -> ToolVectors {
        ToolVectors::build(dims, model_id, tools_id, data, hashes, false)
    }

    fn build(
        dims: usize,
        model_id: u64,
        tools_id: u64,
        data: Vec<f32>,
        hashes: Vec<u64>,
        centre: bool,
    ) -> ToolVectors {
        let n = data.len() / dims.max(1);
        let mut mean = vec![0.0f32; dims];
        if centre {
            for row in data.chunks_exact(dims.max(1)) {
                for (m, x) in mean.iter_mut().zip(row) {
                    *m += x;
                }
            }
            for m in &mut mean {
                *m /= n.max(1) as f32;
            }
        }
        let mut scales = Vec::with_capacity(n);
        let mut norms = Vec::with_capacity(n);
        let mut rows = vec![0i8; n * dims];
        let mut centred = vec![0.0f32; dims];
        for (orig, out) in data
            .chunks_exact(dims.max(1))
            .zip(rows.chunks_exact_mut(dims.max(1)))
        {
            for ((c, x), m) in centred.iter_mut().zip(orig).zip(&mean) {
                *c = x - m;
            }
            let norm = centred.iter().map(|x| x * x).sum::<f32>().sqrt();
            if orig.iter().all(|x| *x == 0.0) || !normalize(&mut centred) {
                scales.push(0.0);
                norms.push(0.0);
                continue;
            }
            let largest = centred.iter().fold(0.0f32, |a, x| a.max(x.abs()));
            let scale = largest / 127.0;
            for (q, c) in out.iter_mut().zip(&centred) {
                *q = (c / scale).round().clamp(-127.0, 127.0) as i8;
            }
            scales.push(scale);
            norms.push(norm);
        }
        let mut hashes = hashes;
        hashes.resize(n, 0);
        ToolVectors::from_parts(
            Header {
                dims,
                model_id,
                tools_id,
            },
            mean,
            scales,
            norms,
            hashes,
            rows,
        )
    }

    /// Tool `tool`'s vector as the model gave it (unit length), rebuilt from the stored mean,
    /// length and quantised centred vector (each component within about 0.5% of the centred
    /// length of the original); `None` for a tool without a vector, or out of range.
    pub fn raw(&self, tool: usize) -> Option<Vec<f32>> {
        let scale = *self.scales.get(tool)?;
        let norm = *self.norms.get(tool)?;
        if scale == 0.0 {
            return None;
        }
        let row = self.rows.get(tool * self.dims..(tool + 1) * self.dims)?;
        let mut v: Vec<f32> = row
            .iter()
            .zip(&self.mean)
            .map(|(q, m)| m + norm * scale * f32::from(*q))
            .collect();
        normalize(&mut v).then_some(v)
    }

    /// True if tool `tool` has no vector (none of its words is in the model's vocabulary).
    pub(crate) fn scales_is_zero(&self, tool: usize) -> bool {
        self.scales.get(tool).is_some_and(|s| *s == 0.0)
    }

    /// The content hash of each tool's text, in tool-number order.
    pub fn hashes(&self) -> &[u64] {
        &self.hashes
    }

    fn from_parts(
        header: Header,
        mean: Vec<f32>,
        scales: Vec<f32>,
        norms: Vec<f32>,
        hashes: Vec<u64>,
        rows: Vec<i8>,
    ) -> ToolVectors {
        let Header {
            dims,
            model_id,
            tools_id,
        } = header;
        let n = scales.len();
        let mut sketches = Vec::new();
        if n > EXACT_UP_TO {
            sketches = scan::sketch_blocks(&rows, dims);
        }
        ToolVectors {
            dims,
            model_id,
            tools_id,
            mean,
            scales,
            norms,
            hashes,
            rows,
            sketches,
            kernels: Kernels::detect(),
        }
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// True if there are no tools.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The id of the model the vectors were computed with.
    pub fn model_id(&self) -> u64 {
        self.model_id
    }

    /// The checksum of the tool names the vectors were computed for, in tool-number order.
    pub fn tools_id(&self) -> u64 {
        self.tools_id
    }

    /// The `k` tools most similar to the unit vector `q`, as `(cosine, tool number)` (the
    /// cosine of both minus the mean tool vector), best first, ties by tool number.
    pub fn nearest(&self, q: &[f32], k: usize) -> Vec<(f32, u32)> {
        match self.centre_query(q) {
            Some(q) => self.nearest_centred(&q, k),
            None => Vec::new(),
        }
    }

    /// The unit vector `q` minus the mean tool vector, scaled to unit length: what
    /// [`ToolVectors::nearest_centred`] and [`ToolVectors::cosine_centred`] take. `None` if `q`
    /// has another number of dimensions, or is the mean.
    pub(crate) fn centre_query(&self, q: &[f32]) -> Option<Vec<f32>> {
        if q.len() != self.dims || self.is_empty() {
            return None;
        }
        let mut q: Vec<f32> = q.iter().zip(&self.mean).map(|(x, m)| x - m).collect();
        normalize(&mut q).then_some(q)
    }

    /// The cosine of tool `tool` with the centred query `q` (0 for a tool that does not exist).
    pub(crate) fn cosine_centred(&self, q: &[f32], tool: u32) -> f32 {
        let i = tool as usize;
        let start = i * self.dims;
        match (self.rows.get(start..start + self.dims), self.scales.get(i)) {
            (Some(row), Some(scale)) if q.len() == self.dims => {
                scale * scan::dot_i8(self.kernels, q, row)
            }
            _ => 0.0,
        }
    }

    /// [`ToolVectors::nearest`] for a query already centred ([`ToolVectors::centre_query`]).
    pub(crate) fn nearest_centred(&self, q: &[f32], k: usize) -> Vec<(f32, u32)> {
        if k == 0 || q.len() != self.dims || self.is_empty() {
            return Vec::new();
        }
        let mut scored: Vec<(f32, u32)> = if self.sketches.is_empty() {
            let all: Vec<u32> = (0..self.len() as u32).collect();
            let mut scored = Vec::with_capacity(all.len());
            scan::rescore(self.kernels, q, &self.rows, &self.scales, &all, &mut scored);
            scored
        } else {
            SCRATCH.with(|s| {
                let mut s = s.borrow_mut();
                self.candidates(q, RESCORE.max(k), &mut s);
                let mut scored = Vec::with_capacity(s.candidates.len());
                scan::rescore(
                    self.kernels,
                    q,
                    &self.rows,
                    &self.scales,
                    &s.candidates,
                    &mut scored,
                );
                scored
            })
        };
        keep_best(&mut scored, k);
        scored.sort_unstable_by(by_rank);
        scored
    }

    /// The `m` tools whose sketches are nearest the query's (all tools at the cut-off distance
    /// included, so a tie never drops one arbitrarily... up to `m` of them, lowest numbers
    /// first), into `scratch.candidates`, in tool-number order.
    fn candidates(&self, q: &[f32], m: usize, scratch: &mut Scratch) {
        let words = self.dims.div_ceil(64);
        let mut qs = vec![0u64; words];
        sign_bits(q.iter().map(|x| *x > 0.0), &mut qs);
        scan::distances(self.kernels, &self.sketches, &qs, &mut scratch.dist);
        // The padding of the last block is not a tool.
        let dist = &scratch.dist[..self.len().min(scratch.dist.len())];
        scan::nearest(
            self.kernels,
            dist,
            m,
            words * 64 + 1,
            &mut scratch.work,
            &mut scratch.candidates,
        );
    }

    /// The file's bytes after the header.
    fn body(&self) -> Vec<u8> {
        let n = self.len();
        let mut body = Vec::with_capacity(4 * self.dims + 16 * n + self.rows.len());
        for x in self.mean.iter().chain(&self.scales).chain(&self.norms) {
            body.extend_from_slice(&x.to_le_bytes());
        }
        for h in &self.hashes {
            body.extend_from_slice(&h.to_le_bytes());
        }
        body.extend(self.rows.iter().map(|x| x.to_le_bytes()[0]));
        body
    }

    /// Writes the vectors to `path` (replacing it): written beside it, then renamed into place.
    pub fn write(&self, path: &Path) -> Result<(), SemanticError> {
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&(self.dims as u32).to_le_bytes());
        header[16..20].copy_from_slice(&(self.len() as u32).to_le_bytes());
        header[24..32].copy_from_slice(&self.model_id.to_le_bytes());
        header[32..40].copy_from_slice(&self.tools_id.to_le_bytes());
        let body = self.body();
        let sum = checksum(&[&header[..CHECKSUM_AT], &body]);
        header[CHECKSUM_AT..HEADER].copy_from_slice(&sum.to_le_bytes());

        let io = |source| SemanticError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut tmp_name = path.as_os_str().to_owned();
        tmp_name.push(".tmp");
        let tmp = std::path::PathBuf::from(tmp_name);
        let mut f = fs::File::create(&tmp).map_err(io)?;
        f.write_all(&header).map_err(io)?;
        f.write_all(&body).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        fs::rename(&tmp, path).map_err(io)
    }

    /// Reads a vectors file written by [`ToolVectors::write`], checking its header, length,
    /// checksum and values.
    pub fn open(path: &Path) -> Result<ToolVectors, SemanticError> {
        let bytes = fs::read(path).map_err(|source| SemanticError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let p = || path.to_path_buf();
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(SemanticError::BadMagic { path: p() });
        }
        let u32_at = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let u64_at = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let version = u32_at(8);
        if version != VERSION {
            return Err(SemanticError::UnsupportedVersion {
                path: p(),
                expected: VERSION,
                found: version,
            });
        }
        let dims = u32_at(12) as usize;
        let count = u32_at(16) as usize;
        // In 128 bits: two 32-bit counts multiplied and added to cannot overflow it.
        let (d, n) = (dims as u128, count as u128);
        let stated = HEADER as u128 + 4 * d + 16 * n + n * d;
        if stated != bytes.len() as u128 || dims == 0 {
            return Err(SemanticError::LengthMismatch {
                path: p(),
                stated: u64::try_from(stated).unwrap_or(u64::MAX),
                actual: bytes.len() as u64,
            });
        }
        let sum = checksum(&[&bytes[..CHECKSUM_AT], &bytes[HEADER..]]);
        if sum != u64_at(CHECKSUM_AT) {
            return Err(SemanticError::Checksum { path: p() });
        }
        let floats = |b: &[u8]| -> Vec<f32> {
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let scales_at = HEADER + 4 * dims;
        let norms_at = scales_at + 4 * count;
        let hashes_at = norms_at + 4 * count;
        let rows_at = hashes_at + 8 * count;
        let mean = floats(&bytes[HEADER..scales_at]);
        let scales = floats(&bytes[scales_at..norms_at]);
        let norms = floats(&bytes[norms_at..hashes_at]);
        let hashes = bytes[hashes_at..rows_at]
            .chunks_exact(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        let bad = |reason: &str| SemanticError::BadVectors {
            path: p(),
            reason: reason.to_string(),
        };
        if mean.iter().any(|x| !x.is_finite()) {
            return Err(bad("the mean vector holds a non-finite value"));
        }
        // A centred unit vector's largest component is at most 1: so is 127 times its scale.
        if scales
            .iter()
            .any(|s| !(0.0..=1.0 / 127.0 + 1e-6).contains(s))
        {
            return Err(bad("a tool's scale is negative, too large or not finite"));
        }
        // A unit vector minus the mean of unit vectors is at most 2 long.
        if norms.iter().any(|x| !(0.0..=2.0 + 1e-6).contains(x)) {
            return Err(bad("a tool's length is negative, too large or not finite"));
        }
        let rows = bytes[rows_at..]
            .iter()
            .map(|b| i8::from_le_bytes([*b]))
            .collect();
        Ok(ToolVectors::from_parts(
            Header {
                dims,
                model_id: u64_at(24),
                tools_id: u64_at(32),
            },
            mean,
            scales,
            norms,
            hashes,
            rows,
        ))
    }
}

/// What a vectors file's header says besides its counts.
struct Header {
    dims: usize,
    model_id: u64,
    tools_id: u64,
}

fn sign_bits(positive: impl Iterator<Item = bool>, out: &mut [u64]) {
    for (i, p) in positive.enumerate() {
        if p {
            out[i / 64] |= 1 << (i % 64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_rows(n: usize, dims: usize) -> Vec<f32> {
        let mut data = Vec::with_capacity(n * dims);
        for i in 0..n {
            let mut row: Vec<f32> = (0..dims)
                .map(|d| (((i * 31 + d * 17) % 13) as f32) - 6.0)
                .collect();
            normalize(&mut row);
            data.extend(row);
        }
        data
    }

    /// Writes a small vectors file, lets `alter` change its bytes, and opens what it left.
    fn open_altered(alter: impl FnOnce(&mut Vec<u8>)) -> Result<ToolVectors, SemanticError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.vectors");
        ToolVectors::new(8, 7, 9, unit_rows(4, 8), vec![1, 2, 3, 4])
            .write(&path)
            .expect("writes");
        let mut bytes = fs::read(&path).expect("reads");
        alter(&mut bytes);
        fs::write(&path, &bytes).expect("writes");
        ToolVectors::open(&path)
    }

    #[test]
    fn written_vectors_read_back_the_same() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.vectors");
        let v = ToolVectors::new(8, 7, 9, unit_rows(20, 8), (0..20).collect());
        v.write(&path).expect("writes");
        let back = ToolVectors::open(&path).expect("reads");
        assert_eq!(
            (
                &back.mean,
                &back.scales,
                &back.norms,
                &back.hashes,
                &back.rows
            ),
            (&v.mean, &v.scales, &v.norms, &v.hashes, &v.rows)
        );
        assert_eq!((back.model_id(), back.tools_id(), back.dims()), (7, 9, 8));
    }

    #[test]
    fn quantised_cosines_are_within_a_hundredth_of_the_exact_ones() {
        let data = unit_rows(50, 32);
        let v = ToolVectors::new(32, 0, 0, data.clone(), Vec::new());
        let q = v.centre_query(&data[..32]).expect("a vector");
        for (i, row) in data.chunks_exact(32).enumerate() {
            let mut c: Vec<f32> = row.iter().zip(&v.mean).map(|(x, m)| x - m).collect();
            normalize(&mut c);
            let exact: f32 = c.iter().zip(&q).map(|(a, b)| a * b).sum();
            let got = v.cosine_centred(&q, i as u32);
            assert!(
                (got - exact).abs() < 0.01,
                "tool {i}: {got} against {exact}"
            );
        }
    }

    #[test]
    fn a_checksummed_file_with_a_bad_scale_is_refused() {
        let opened = open_altered(|bytes| {
            let scale_at = HEADER + 4 * 8;
            bytes[scale_at..scale_at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
            let sum = checksum(&[&bytes[..CHECKSUM_AT], &bytes[HEADER..]]);
            bytes[CHECKSUM_AT..HEADER].copy_from_slice(&sum.to_le_bytes());
        });
        assert!(matches!(opened, Err(SemanticError::BadVectors { .. })));
    }

    #[test]
    fn a_header_claiming_more_tools_than_the_file_holds_is_a_length_mismatch() {
        let opened = open_altered(|bytes| {
            bytes[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
            bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        });
        assert!(matches!(opened, Err(SemanticError::LengthMismatch { .. })));
    }

    #[test]
    fn a_flipped_byte_is_a_checksum_error() {
        let opened = open_altered(|bytes| {
            bytes[HEADER + 5] ^= 1;
        });
        assert!(matches!(opened, Err(SemanticError::Checksum { .. })));
    }

    #[test]
    fn another_version_is_refused_as_such() {
        let opened = open_altered(|bytes| {
            bytes[8] = 3;
        });
        assert!(matches!(
            opened,
            Err(SemanticError::UnsupportedVersion { found: 3, .. })
        ));
    }

    #[test]
    fn a_truncated_file_is_a_length_mismatch() {
        let opened = open_altered(|bytes| {
            bytes.truncate(bytes.len() - 4);
        });
        assert!(matches!(opened, Err(SemanticError::LengthMismatch { .. })));
    }

    #[test]
    fn a_tools_vector_is_rebuilt_from_the_stored_one_within_a_hundredth() {
        let data = unit_rows(30, 64);
        let v = ToolVectors::new(64, 0, 0, data.clone(), Vec::new());
        for (i, row) in data.chunks_exact(64).enumerate() {
            let back = v.raw(i).expect("a vector");
            let cos: f32 = back.iter().zip(row).map(|(a, b)| a * b).sum();
            assert!(cos > 0.99, "tool {i}: cosine {cos} with its original");
        }
    }

    #[test]
    fn a_file_of_another_kind_is_bad_magic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.vectors");
        fs::write(&path, [0u8; 64]).expect("writes");
        assert!(matches!(
            ToolVectors::open(&path),
            Err(SemanticError::BadMagic { .. })
        ));
    }

    #[test]
    fn sketch_search_finds_the_exact_nearest_tool_in_a_large_catalog() {
        let n = EXACT_UP_TO + 100;
        let data = unit_rows(n, 16);
        let v = ToolVectors::new(16, 0, 0, data.clone(), Vec::new());
        assert!(!v.sketches.is_empty());
        let start = 4321 * 16;
        let q = data[start..start + 16].to_vec();
        let found = v.nearest(&q, 1);
        // Rows repeat with period 13; the query's own row or an identical one is first.
        let best = found[0].1 as usize * 16;
        assert_eq!(data[best..best + 16], q[..]);
        assert!((found[0].0 - 1.0).abs() < 0.01);
    }
}
