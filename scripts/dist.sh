#!/usr/bin/env bash
# Builds the release archive toolgate-<version>-<target>.tar.gz and its SHA-256 file:
#
#   toolgate-<version>-<target>/
#     toolgate                      the program, with the fs, http and sqlite plugins built in
#     plugins/                      the same plugins as libraries, for users who prefer them
#                                   (TOOLGATE_PLUGIN_PATH=<this folder>/plugins, or `path:`)
#     policies/                     the ready-made policies (default.yaml, examples/, ...)
#     schemas/                      the policy's and the audit line's JSON Schemas
#     examples/                     the conversations of the README (toolgate run examples/turn.json)
#     man/man1/                     the manual pages (man -M man toolgate)
#     completions/                  bash, zsh and fish completion scripts
#     README.md, docs/, LICENSE-MIT, LICENSE-APACHE
#
# Usage: scripts/dist.sh [--profile release|dev] [--no-build] [--out DIR]
#
#   --profile   the cargo profile to build and pack (default: release)
#   --no-build  pack what target/<profile> holds (the CI's test reuses the workspace's dev build
#               instead of building again)
#   --out       where the archive goes (default: target/dist)
#
# Prints the archive's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
build=1
out=target/dist
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        --out) out="$2"; shift 2 ;;
        *) echo "scripts/dist.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$profile" in
    dev) profile_dir=debug ;;
    *) profile_dir="$profile" ;;
esac

plugins=(fs http sqlite)
if [ "$build" = 1 ]; then
    echo "== cargo build --profile $profile: toolgate and the plugin libraries" >&2
    packages=(-p toolgate-cli)
    for plugin in "${plugins[@]}"; do packages+=(-p "toolgate-plugin-$plugin"); done
    cargo build --locked --profile "$profile" "${packages[@]}" >&2
fi

target_dir="${CARGO_TARGET_DIR:-target}/$profile_dir"
program="$target_dir/toolgate"
[ -x "$program" ] || { echo "scripts/dist.sh: $program is not built" >&2; exit 1; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
triple="$(rustc -vV | sed -n 's/^host: //p')"
name="toolgate-$version-$triple"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"
mkdir -p "$root/plugins" "$root/man/man1" "$root/completions" "$root/schemas" "$root/examples"

cp "$program" "$root/toolgate"
for plugin in "${plugins[@]}"; do
    cp "$target_dir/libtoolgate_plugin_$plugin.so" "$root/plugins/"
done
cp -R policies "$root/policies"
cp schemas/*.json "$root/schemas/"
cp examples/*.json "$root/examples/"
cp -R docs "$root/docs"
cp README.md LICENSE-MIT LICENSE-APACHE "$root/"
"$root/toolgate" man --dir "$root/man/man1" >&2
"$root/toolgate" completions bash >"$root/completions/toolgate.bash"
"$root/toolgate" completions zsh >"$root/completions/_toolgate"
"$root/toolgate" completions fish >"$root/completions/toolgate.fish"

archive="$name.tar.gz"
# Owner, group and times of the files are not the builder's business.
tar --owner=0 --group=0 --numeric-owner -czf "$out/$archive" -C "$stage" "$name"
(cd "$out" && sha256sum "$archive" >"$archive.sha256")
echo "$out/$archive"
