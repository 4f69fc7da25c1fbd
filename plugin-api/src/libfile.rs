//! Checks that a file is a complete shared library for this platform before the system loader
//! maps it.
//!
//! The loader trusts a library's headers: it maps each loadable segment at the offset the header
//! gives, and touching a page that lies past the end of a truncated file kills the process with
//! SIGBUS. Opening a FIFO blocks until someone writes to it; a device such as `/dev/zero` can
//! be read forever. So before `dlopen` the file must be a regular file whose headers parse and
//! whose every segment lies inside it.

use std::fs::File;
use std::path::Path;

use object::read::ReadCache;
use object::{Architecture, FileKind, Object, ObjectKind, ObjectSegment, ReadRef};

use crate::load_error::LibraryProblem;

/// The object format this platform's loader reads.
#[cfg(any(target_os = "macos", target_os = "ios"))]
const NATIVE_FORMAT: &str = "Mach-O";
#[cfg(not(any(target_os = "macos", target_os = "ios")))]
const NATIVE_FORMAT: &str = "ELF";

/// Why `path` cannot be a plugin library, or `Ok` when the system loader may try it.
pub(crate) fn check(path: &Path) -> Result<(), LibraryProblem> {
    // `metadata` is a `stat`: it does not open the file, so a FIFO cannot block it.
    let meta = std::fs::metadata(path).map_err(LibraryProblem::Unreadable)?;
    if !meta.is_file() {
        return Err(LibraryProblem::NotAFile {
            kind: crate::filekind::non_regular_kind(&meta.file_type()),
        });
    }
    if cfg!(windows) {
        // The checks below read ELF and Mach-O; the Windows loader reports its own errors.
        return Ok(());
    }
    let file = File::open(path).map_err(LibraryProblem::Unreadable)?;
    let size = meta.len();
    let cache = ReadCache::new(file);
    check_object(&cache, size)
}

fn check_object<'data, R: ReadRef<'data>>(data: R, size: u64) -> Result<(), LibraryProblem> {
    let kind = FileKind::parse(data).map_err(|_| LibraryProblem::UnknownFormat {
        native: NATIVE_FORMAT,
        size,
    })?;
    match kind {
        FileKind::Elf32 | FileKind::Elf64 => native("ELF")?,
        FileKind::MachO32 | FileKind::MachO64 => native("Mach-O")?,
        FileKind::MachOFat32 => return check_fat::<object::macho::FatArch32, R>(data, size),
        FileKind::MachOFat64 => return check_fat::<object::macho::FatArch64, R>(data, size),
        _ => {
            return Err(LibraryProblem::NotALoadableFormat {
                native: NATIVE_FORMAT,
            });
        }
    }
    check_image(data, size)
}

/// One object file (a whole ELF or Mach-O file, or one architecture of a fat Mach-O file).
fn check_image<'data, R: ReadRef<'data>>(data: R, size: u64) -> Result<(), LibraryProblem> {
    let object =
        object::File::parse(data).map_err(|error| LibraryProblem::BadHeaders { size, error })?;
    if object.kind() != ObjectKind::Dynamic {
        return Err(LibraryProblem::NotDynamic {
            what: match object.kind() {
                ObjectKind::Executable => "an executable program",
                ObjectKind::Relocatable => "an object file (.o), not linked into a library",
                ObjectKind::Core => "a core dump",
                _ => "an object file of unknown kind",
            },
        });
    }
    if let Some(host) = host_architecture()
        && object.architecture() != host
    {
        // Checked here because glibc's own message for a library of another machine is the
        // misleading "cannot open shared object file: No such file or directory".
        return Err(LibraryProblem::OtherArchitecture {
            found: format!("{:?}", object.architecture()),
            host: format!("{host:?}"),
        });
    }
    for segment in object.segments() {
        let (offset, len) = segment.file_range();
        let end = offset.checked_add(len);
        if end.is_none_or(|end| end > size) {
            return Err(LibraryProblem::SegmentOutside {
                segment: segment.name().ok().flatten().map(str::to_owned),
                start: offset,
                end: offset.saturating_add(len),
                size,
            });
        }
    }
    Ok(())
}

/// The architecture this program was built for, when `object` has a name for it.
fn host_architecture() -> Option<Architecture> {
    Some(match std::env::consts::ARCH {
        "x86_64" if cfg!(target_pointer_width = "32") => Architecture::X86_64_X32,
        "x86_64" => Architecture::X86_64,
        "x86" => Architecture::I386,
        "aarch64" if cfg!(target_pointer_width = "32") => Architecture::Aarch64_Ilp32,
        "aarch64" => Architecture::Aarch64,
        "arm" => Architecture::Arm,
        "riscv64" => Architecture::Riscv64,
        "riscv32" => Architecture::Riscv32,
        "powerpc64" => Architecture::PowerPc64,
        "s390x" => Architecture::S390x,
        "loongarch64" => Architecture::LoongArch64,
        _ => return None,
    })
}

fn check_fat<'data, Fat: object::read::macho::FatArch, R: ReadRef<'data>>(
    data: R,
    size: u64,
) -> Result<(), LibraryProblem> {
    native("Mach-O")?;
    let fat = object::read::macho::MachOFatFile::<Fat>::parse(data)
        .map_err(|error| LibraryProblem::BadHeaders { size, error })?;
    for arch in fat.arches() {
        let (offset, len) = arch.file_range();
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(LibraryProblem::FatArchOutside {
                arch: format!("{:?}", arch.architecture()),
                start: offset,
                end: offset.saturating_add(len),
                size,
            });
        }
    }
    let host = host_architecture();
    let mut checked = false;
    for arch in fat.arches() {
        if host.is_some_and(|host| arch.architecture() != host) {
            continue;
        }
        let image = arch
            .data(data)
            .map_err(|error| LibraryProblem::FatArchUnreadable {
                arch: format!("{:?}", arch.architecture()),
                error,
            })?;
        check_image(image, arch.file_range().1)?;
        checked = true;
    }
    if !checked {
        return Err(LibraryProblem::NoHostArchitecture {
            host: format!("{:?}", host.unwrap_or(Architecture::Unknown)),
            held: fat
                .arches()
                .iter()
                .map(|arch| format!("{:?}", arch.architecture()))
                .collect(),
        });
    }
    Ok(())
}

/// `Ok` when `format` is what this platform loads.
fn native(format: &'static str) -> Result<(), LibraryProblem> {
    if format == NATIVE_FORMAT {
        Ok(())
    } else {
        Err(LibraryProblem::ForeignFormat {
            format,
            native: NATIVE_FORMAT,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_too_short_for_any_header_is_not_a_shared_library() {
        let err = check_object(&b"\x7fEL"[..], 3).expect_err("refused");
        assert!(
            matches!(err, LibraryProblem::UnknownFormat { size: 3, .. }),
            "{err}"
        );
    }

    #[test]
    #[cfg(not(any(target_os = "macos", target_os = "ios")))]
    fn an_elf_header_without_the_rest_is_damaged_or_truncated() {
        // The 16-byte ELF identification of a 64-bit little-endian file, and nothing else.
        let ident = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0";
        let err = check_object(&ident[..], 16).expect_err("refused");
        assert!(
            err.to_string()
                .starts_with("is damaged or truncated (16 bytes)"),
            "{err}"
        );
    }
}
