//! The loading pipeline: text, positioned tree, schema check, typed [`Policy`], semantic checks.
//!
//! Each stage reports every problem it can find before giving up, so a user fixes a policy in
//! one pass rather than one error at a time. A later stage runs only when the earlier ones
//! found nothing: a semantic check on a value of the wrong type would only add noise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_saphyr::granit_parser::ScalarStyle;

use crate::duration::parse_duration;
use crate::error::{Diagnostic, DiagnosticKind, Diagnostics, PolicyError};
use crate::file::{MAX_CATALOG_FILE_BYTES, MAX_POLICY_FILE_BYTES, check_text_file, read_text_file};
use crate::glob::{Glob, PathGlob};
use crate::model::parse_memory_limit;
use crate::model::{
    AliasSpec, CharCap, DispatchSettings, EmbeddingsSettings, Grants, Isolation, NameProfile,
    OnError, PluginLocation, PluginSpec, Policy, Position, ReductionSettings, Rule, Rules,
    ScriptSource, Scripts, SearchSettings, SessionSettings, ToolOverride,
};
use crate::schema;
use crate::yaml::{self, Entry, Kind, Node, Pos, YamlProblemKind};

/// Reads and loads the policy file at `path`. Relative paths inside it are resolved against
/// the directory of `path`.
///
/// # Errors
///
/// A [`PolicyError`] listing every problem found: the file cannot be read, is not valid YAML,
/// breaks the schema, or refers to files that cannot be read.
///
/// ```no_run
/// let policy = toolgate_policy::load_file("policies/default.yaml".as_ref())?;
/// # Ok::<(), toolgate_policy::PolicyError>(())
/// ```
pub fn load_file(path: &Path) -> Result<Policy, PolicyError> {
    let text = read_text_file(path, MAX_POLICY_FILE_BYTES)
        .map_err(|e| PolicyError::io(path, &e.problem))?;
    load_str(&text, path)
}

/// Loads a policy from `text`. `file` names it in error messages, and relative paths inside
/// the policy (scripts, plugins, catalogs, the index, a `file://` store) are resolved against
/// its directory; the file itself is not read.
///
/// # Errors
///
/// A [`PolicyError`] listing every problem found, each at its line and column; see
/// [`load_file`].
///
/// ```
/// use std::path::Path;
///
/// let policy = toolgate_policy::load_str("version: 1\ndispatch: {timeout: 5s}\n", Path::new("p.yaml"))?;
/// assert_eq!(policy.dispatch.timeout, Some(std::time::Duration::from_secs(5)));
///
/// let err = toolgate_policy::load_str("version: 1\ndispatchh: {}\n", Path::new("p.yaml")).unwrap_err();
/// assert!(err.to_string().starts_with("p.yaml:2:1: unknown key \"dispatchh\""));
/// # Ok::<(), toolgate_policy::PolicyError>(())
/// ```
pub fn load_str(text: &str, file: &Path) -> Result<Policy, PolicyError> {
    let at = |pos: Pos, message: String, kind: DiagnosticKind| Diagnostic {
        file: file.to_path_buf(),
        at: Some(pos),
        message,
        kind,
    };
    let root = match yaml::parse(text) {
        Ok(Some(root)) => root,
        Ok(None) => {
            return Err(PolicyError::new(vec![at(
                Pos { line: 1, column: 1 },
                "the policy file is empty; it needs at least `version: 1`".to_owned(),
                DiagnosticKind::Schema {
                    keyword: "required".to_owned(),
                },
            )]));
        }
        Err(problems) => {
            let mut diagnostics = Diagnostics::default();
            for p in problems.list {
                let kind = match p.kind {
                    YamlProblemKind::Syntax => DiagnosticKind::Syntax,
                    YamlProblemKind::DuplicateKey => DiagnosticKind::DuplicateKey,
                    YamlProblemKind::Unsupported => DiagnosticKind::Unsupported,
                };
                diagnostics.push(at(p.pos, p.message, kind));
            }
            diagnostics.add_omitted(problems.omitted);
            return Err(diagnostics.into_error());
        }
    };

    let problems = schema::check(&root, file);
    if !problems.is_empty() {
        return Err(problems.into_error());
    }

    let mut build = Build::new(file);
    let policy = build.policy(&root);
    if build.diagnostics.is_empty() {
        Ok(policy)
    } else {
        Err(build.diagnostics.into_error())
    }
}

/// Turns a schema-valid tree into a [`Policy`], collecting the problems the schema cannot see.
///
/// The schema has already checked every type, so the accessors below fall back to defaults
/// instead of failing: a fallback is unreachable for a valid tree.
struct Build<'a> {
    file: &'a Path,
    dir: PathBuf,
    diagnostics: Diagnostics,
}

impl<'a> Build<'a> {
    fn new(file: &'a Path) -> Build<'a> {
        let dir = match file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Build {
            file,
            dir,
            diagnostics: Diagnostics::default(),
        }
    }

    fn report(&mut self, pos: Pos, message: String, kind: DiagnosticKind) {
        self.diagnostics.push(Diagnostic {
            file: self.file.to_path_buf(),
            at: Some(pos),
            message,
            kind,
        });
    }

    fn position(&self, pos: Pos) -> Option<Position> {
        Some(Position {
            file: self.file.to_path_buf(),
            line: pos.line,
            column: pos.column,
        })
    }

    fn resolve(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.dir.join(path)
        }
    }

    fn policy(&mut self, root: &Node) -> Policy {
        let mut policy = Policy {
            source: Some(self.file.to_path_buf()),
            ..Policy::default()
        };
        for entry in entries(root) {
            let value = &entry.value;
            match entry.key.as_str() {
                "version" => {
                    policy.version = int(value).and_then(|v| u32::try_from(v).ok()).unwrap_or(1)
                }
                "name_profile" => {
                    policy.name_profile = match text(value) {
                        "openai" => NameProfile::Openai,
                        "anthropic" => NameProfile::Anthropic,
                        _ => NameProfile::Mcp,
                    }
                }
                "dispatch" => policy.dispatch = self.dispatch(value),
                "tools" => policy.tools = self.tools(value),
                "aliases" => policy.aliases = aliases(self, value),
                "rules" => policy.rules = self.rules(value, "rules"),
                "scripts" => policy.scripts = self.scripts(value),
                "plugins" => policy.plugins = self.plugins(value),
                "reduction" => policy.reduction = Some(self.reduction(value)),
                "search" => policy.search = Some(self.search(value)),
                "mcp_servers" => {
                    let mut cx = crate::mcp_servers::Context {
                        file: self.file,
                        dir: &self.dir,
                        diagnostics: &mut self.diagnostics,
                    };
                    policy.mcp_servers = crate::mcp_servers::load(value, &mut cx);
                }
                "sessions" => policy.sessions = self.sessions(value),
                _ => {}
            }
        }
        policy
    }

    fn dispatch(&mut self, node: &Node) -> DispatchSettings {
        let mut dispatch = DispatchSettings::default();
        for entry in entries(node) {
            let value = &entry.value;
            match entry.key.as_str() {
                "sequential" => dispatch.sequential = boolean(value),
                "concurrency" => {
                    dispatch.concurrency = int(value).and_then(|v| usize::try_from(v).ok());
                }
                "timeout" => {
                    if let Some(timeout) = self.duration(entry, "dispatch.timeout") {
                        dispatch.timeout = timeout;
                    }
                }
                "max_result_chars" => {
                    dispatch.max_result_chars =
                        char_cap(value).unwrap_or(dispatch.max_result_chars);
                }
                "on_error" => {
                    dispatch.on_error = match text(value) {
                        "fail" => OnError::Fail,
                        _ => OnError::Model,
                    }
                }
                "stop_on_error" => dispatch.stop_on_error = boolean(value),
                "script_timeout" => {
                    // The schema refuses `none` and zero: a script always has a bound.
                    if let Some(Some(bound)) = self.duration(entry, "dispatch.script_timeout") {
                        dispatch.script_timeout = bound;
                    }
                }
                _ => {}
            }
        }
        dispatch
    }

    /// A duration value; `None` when it was reported as wrong.
    fn duration(&mut self, entry: &Entry, path: &str) -> Option<Option<Duration>> {
        match parse_duration(text(&entry.value)) {
            Ok(duration) => Some(duration),
            Err(error) => {
                self.report(
                    entry.value_pos(),
                    format!("{path}: {error}"),
                    DiagnosticKind::Duration,
                );
                None
            }
        }
    }

    /// A compiled glob; `None` when it was reported as wrong.
    fn glob(&mut self, pattern: &str, pos: Pos, path: &str) -> Option<Glob> {
        Glob::new(pattern)
            .map_err(|error| self.report(pos, format!("{path}: {error}"), DiagnosticKind::Glob))
            .ok()
    }

    /// A compiled path glob; `None` when it was reported as wrong.
    fn path_glob(&mut self, pattern: &str, pos: Pos, path: &str) -> Option<PathGlob> {
        PathGlob::new(pattern)
            .map_err(|error| self.report(pos, format!("{path}: {error}"), DiagnosticKind::Glob))
            .ok()
    }

    fn tools(&mut self, node: &Node) -> Vec<ToolOverride> {
        let mut tools = Vec::new();
        for entry in entries(node) {
            let path = join_key("tools", &entry.key);
            let pattern = self.glob(&entry.key, entry.key_pos, &path);
            let mut timeout = None;
            let mut max_result_chars = None;
            let mut sequential_group = None;
            let mut rules = Rules::default();
            // The settings are read even under a bad pattern, so their problems are reported too.
            for setting in entries(&entry.value) {
                let value = &setting.value;
                match setting.key.as_str() {
                    "timeout" => timeout = self.duration(setting, &format!("{path}.timeout")),
                    "max_result_chars" => max_result_chars = char_cap(value),
                    "sequential_group" => sequential_group = Some(text(value).to_owned()),
                    "rules" => rules = self.rules(value, &format!("{path}.rules")),
                    _ => {}
                }
            }
            if let Some(pattern) = pattern {
                tools.push(ToolOverride {
                    pattern,
                    timeout,
                    max_result_chars,
                    sequential_group,
                    rules,
                    position: self.position(entry.key_pos),
                });
            }
        }
        tools
    }

    fn rules(&mut self, node: &Node, path: &str) -> Rules {
        let mut rules = Rules::default();
        for entry in entries(node) {
            let list: Vec<Rule> = items(&entry.value)
                .iter()
                .enumerate()
                .map(|(i, item)| self.rule(item, &format!("{path}.{}[{i}]", entry.key)))
                .collect();
            match entry.key.as_str() {
                "allow" => rules.allow = list,
                "deny" => rules.deny = list,
                _ => {}
            }
        }
        rules
    }

    fn rule(&mut self, node: &Node, path: &str) -> Rule {
        let mut rule = Rule {
            position: self.position(node.pos),
            ..Rule::default()
        };
        for entry in entries(node) {
            let value = &entry.value;
            let field = format!("{path}.{}", entry.key);
            match entry.key.as_str() {
                "tools" => rule.tools = self.globs(value, &field),
                "sessions" => rule.sessions = self.globs(value, &field),
                "args" => {
                    for arg in entries(value) {
                        let at = join_key(&field, &arg.key);
                        if let Some(glob) = self.glob(text(&arg.value), arg.value_pos(), &at) {
                            rule.args.insert(arg.key.clone(), glob);
                        }
                    }
                }
                "paths" => {
                    for arg in entries(value) {
                        let at = join_key(&field, &arg.key);
                        if let Some(glob) = self.path_glob(text(&arg.value), arg.key_pos, &at) {
                            rule.paths.insert(arg.key.clone(), glob);
                        }
                    }
                }
                "reason" => rule.reason = Some(text(value).to_owned()),
                _ => {}
            }
        }
        rule
    }

    /// A list of globs, each compiled; the bad ones are reported and left out.
    fn globs(&mut self, node: &Node, path: &str) -> Vec<Glob> {
        let mut out = Vec::new();
        for (i, item) in items(node).iter().enumerate() {
            out.extend(self.glob(text(item), item.pos, &format!("{path}[{i}]")));
        }
        out
    }

    fn scripts(&mut self, node: &Node) -> Scripts {
        let mut scripts = Scripts::default();
        for entry in entries(node) {
            let source = self.script(&entry.value, &format!("scripts.{}", entry.key));
            match entry.key.as_str() {
                "rewrite" => scripts.rewrite = source,
                "before" => scripts.before = source,
                "after" => scripts.after = source,
                "unknown_tool" => scripts.unknown_tool = source,
                _ => {}
            }
        }
        scripts
    }

    /// An inline script keeps the policy file and the line its code starts on; a file script
    /// is read now, so a missing file is reported at its `file:` key.
    fn script(&mut self, node: &Node, path: &str) -> Option<ScriptSource> {
        if let Some(code) = node.get("code") {
            let Kind::Str(text, style) = &code.value.kind else {
                return None;
            };
            // The parser places a block scalar (`code: |`) at its first non-blank line; the
            // code's own first line is earlier by the blank lines it starts with.
            let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
            let leading_blank_lines = if block {
                u32::try_from(text.chars().take_while(|c| *c == '\n').count()).unwrap_or(0)
            } else {
                0
            };
            let line_offset = code
                .value
                .pos
                .line
                .saturating_sub(leading_blank_lines)
                .max(1);
            // Rhai columns count from the start of each code line. In a block scalar every line
            // is indented alike; a flow scalar maps exactly only while it stays on one line
            // (`code: "..."`), where its text starts after the quote.
            // The parser places a scalar at its text, or at the opening quote of a quoted one.
            let column_offset = match style {
                ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => code.value.pos.column,
                _ => code.value.pos.column.saturating_sub(1),
            };
            return Some(ScriptSource {
                code: text.clone(),
                file: self.file.to_path_buf(),
                line_offset,
                column_offset,
            });
        }
        let entry = node.get("file")?;
        let written = text(&entry.value);
        let resolved = self.resolve(written);
        match read_text_file(&resolved, MAX_POLICY_FILE_BYTES) {
            Ok(code) => Some(ScriptSource {
                code,
                file: resolved,
                line_offset: 1,
                column_offset: 0,
            }),
            Err(error) => {
                let error = error.problem;
                self.report(
                    entry.key_pos,
                    format!(
                        "{path}.file: cannot read script {written:?} (looked for {}): {error}",
                        resolved.display()
                    ),
                    DiagnosticKind::MissingFile,
                );
                None
            }
        }
    }

    fn plugins(&mut self, node: &Node) -> Vec<PluginSpec> {
        let mut plugins = Vec::new();
        for item in items(node) {
            let mut location = None;
            let mut config = serde_json::Value::Object(serde_json::Map::new());
            let mut searchable = false;
            let mut max_threads = PluginSpec::DEFAULT_MAX_THREADS;
            let mut max_queued = PluginSpec::DEFAULT_MAX_QUEUED;
            let mut isolation = Isolation::InProcess;
            let mut memory_limit = None;
            let mut sha256 = None;
            let mut grants = None;
            for entry in entries(item) {
                match entry.key.as_str() {
                    "name" => location = Some(PluginLocation::Name(text(&entry.value).to_owned())),
                    "path" => {
                        location = Some(PluginLocation::Path(self.resolve(text(&entry.value))));
                    }
                    "config" => config = entry.value.to_json(),
                    "searchable" => searchable = boolean(&entry.value),
                    "max_threads" => {
                        max_threads = int(&entry.value)
                            .and_then(|v| usize::try_from(v).ok())
                            .unwrap_or(max_threads);
                    }
                    "max_queued" => {
                        max_queued = int(&entry.value)
                            .and_then(|v| usize::try_from(v).ok())
                            .unwrap_or(max_queued);
                    }
                    // The schema allows in_process and process only.
                    "isolation" if text(&entry.value) == "process" => {
                        isolation = Isolation::Process;
                    }
                    // The schema checked the form; the largest it allows fits a u64.
                    "memory_limit" => memory_limit = parse_memory_limit(text(&entry.value)),
                    "sha256" => sha256 = Some(text(&entry.value).to_ascii_lowercase()),
                    "grants" => grants = Some(self.grants(&entry.value)),
                    _ => {}
                }
            }
            // The schema requires exactly one of name and path.
            if let Some(location) = location {
                plugins.push(PluginSpec {
                    location,
                    config,
                    searchable,
                    max_threads,
                    max_queued,
                    isolation,
                    memory_limit,
                    sha256,
                    grants,
                    position: self.position(item.pos),
                });
            }
        }
        plugins
    }

    fn grants(&mut self, node: &Node) -> Grants {
        let mut grants = Grants::default();
        for entry in entries(node) {
            match entry.key.as_str() {
                "fs_read" => {
                    grants.fs_read = strings(&entry.value)
                        .iter()
                        .map(|p| self.resolve(p))
                        .collect();
                }
                "fs_write" => {
                    grants.fs_write = strings(&entry.value)
                        .iter()
                        .map(|p| self.resolve(p))
                        .collect();
                }
                "env" => grants.env = strings(&entry.value),
                "net" => grants.net = strings(&entry.value),
                "subprocess" => grants.subprocess = boolean(&entry.value),
                _ => {}
            }
        }
        grants
    }

    fn reduction(&mut self, node: &Node) -> ReductionSettings {
        let mut reduction = ReductionSettings::default();
        for entry in entries(node) {
            let value = &entry.value;
            let size = || int(value).and_then(|v| u64::try_from(v).ok());
            match entry.key.as_str() {
                "store" => reduction.store = Some(self.store_url(text(value))),
                "store_options" => {
                    reduction.store_options = entries(value)
                        .iter()
                        .map(|o| (o.key.clone(), text(&o.value).to_owned()))
                        .collect();
                }
                "max_result_bytes" => set(&mut reduction.max_result_bytes, size()),
                "preview_head_chars" => set(&mut reduction.preview_head_chars, size()),
                "preview_tail_chars" => set(&mut reduction.preview_tail_chars, size()),
                "max_context_tokens" => set(&mut reduction.max_context_tokens, size()),
                "keep_recent_tool_rounds" => set(&mut reduction.keep_recent_tool_rounds, size()),
                "min_offload_bytes" => set(&mut reduction.min_offload_bytes, size()),
                "hide_foreign_results" => reduction.hide_foreign_results = boolean(value),
                _ => {}
            }
        }
        reduction
    }

    /// `file://relative/dir` is resolved against the policy's directory and made absolute
    /// (`file:///abs/dir`); every other URL is kept as written.
    fn store_url(&self, url: &str) -> String {
        let Some(rest) = url.strip_prefix("file://") else {
            return url.to_owned();
        };
        if rest.starts_with('/') {
            return url.to_owned();
        }
        let joined = self.dir.join(rest);
        let absolute = std::path::absolute(&joined).unwrap_or(joined);
        format!("file://{}", absolute.display())
    }

    fn sessions(&mut self, node: &Node) -> SessionSettings {
        let mut sessions = SessionSettings::default();
        for entry in entries(node) {
            if entry.key == "ttl"
                && let Some(ttl) = self.duration(entry, "sessions.ttl")
            {
                sessions.ttl = ttl;
            }
        }
        sessions
    }

    fn search(&mut self, node: &Node) -> SearchSettings {
        let mut search = SearchSettings::default();
        for entry in entries(node) {
            let value = &entry.value;
            match entry.key.as_str() {
                "catalogs" => {
                    for (i, item) in items(value).iter().enumerate() {
                        let written = text(item);
                        let resolved = self.resolve(written);
                        if let Err(error) = check_text_file(&resolved, MAX_CATALOG_FILE_BYTES) {
                            let error = error.problem;
                            self.report(
                                item.pos,
                                format!(
                                    "search.catalogs[{i}]: cannot read catalog {written:?} \
                                     (looked for {}): {error}",
                                    resolved.display()
                                ),
                                DiagnosticKind::MissingFile,
                            );
                        }
                        search.catalogs.push(resolved);
                    }
                }
                "searchable_tools" => {
                    search.searchable_tools = self.globs(value, "search.searchable_tools");
                }
                "keywords" => {
                    search.keywords = entries(value)
                        .iter()
                        .map(|k| (k.key.clone(), strings(&k.value)))
                        .collect::<BTreeMap<_, _>>();
                }
                "allow_direct_calls" => search.allow_direct_calls = boolean(value),
                "use_model_native" => search.use_model_native = boolean(value),
                "index_file" => search.index_file = Some(self.resolve(text(value))),
                "explain" => search.explain = boolean(value),
                "embeddings" => {
                    search.embeddings = value.get("model").map(|m| EmbeddingsSettings {
                        model: self.resolve(text(&m.value)),
                    });
                }
                "default_max_results" => {
                    set(
                        &mut search.default_max_results,
                        int(value).and_then(|v| u64::try_from(v).ok()),
                    );
                }
                _ => {}
            }
        }
        search
    }
}

fn aliases(build: &Build<'_>, node: &Node) -> BTreeMap<String, AliasSpec> {
    entries(node)
        .iter()
        .map(|entry| {
            let mut spec = AliasSpec {
                position: build.position(entry.key_pos),
                ..AliasSpec::default()
            };
            if let Some(names) = entry.value.get("names") {
                spec.names = strings(&names.value);
            }
            if let Some(arguments) = entry.value.get("arguments") {
                spec.arguments = entries(&arguments.value)
                    .iter()
                    .map(|a| (a.key.clone(), strings(&a.value)))
                    .collect();
            }
            (entry.key.clone(), spec)
        })
        .collect()
}

/// `parent.key`, quoting a key that is not a plain word (`tools."fs.*"`).
fn join_key(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}.{key:?}")
    }
}

fn set(target: &mut u64, value: Option<u64>) {
    if let Some(value) = value {
        *target = value;
    }
}

fn entries(node: &Node) -> &[Entry] {
    match &node.kind {
        Kind::Map(mapping) => &mapping.entries,
        _ => &[],
    }
}

fn items(node: &Node) -> &[Node] {
    match &node.kind {
        Kind::Seq(items) => items,
        _ => &[],
    }
}

fn text(node: &Node) -> &str {
    match &node.kind {
        Kind::Str(s, _) => s,
        _ => "",
    }
}

fn strings(node: &Node) -> Vec<String> {
    items(node).iter().map(|n| text(n).to_owned()).collect()
}

/// The largest whole number a policy holds: 2^53 - 1, the schema's `maximum` for every
/// integer setting. Up to it, a float such as `5.0` or `1e3` is exactly a whole number.
const MAX_WHOLE_NUMBER: f64 = 9_007_199_254_740_991.0;

/// A whole number: an integer, or a float without a fractional part (`5.0`, `1e3`), which
/// JSON Schema also counts as an integer. The schema has bounded it already.
fn int(node: &Node) -> Option<i64> {
    match node.kind {
        Kind::Int(i) => Some(i),
        Kind::Float(f) if f.fract() == 0.0 && f.abs() <= MAX_WHOLE_NUMBER => {
            // Exact: |f| <= 2^53 - 1 fits an i64 with no rounding.
            #[allow(clippy::cast_possible_truncation)]
            Some(f as i64)
        }
        _ => None,
    }
}

/// A result cap: `-1` is no cap (the schema refuses anything below it).
fn char_cap(node: &Node) -> Option<CharCap> {
    match int(node)? {
        -1 => Some(CharCap::Unlimited),
        n => u64::try_from(n).ok().map(CharCap::Chars),
    }
}

fn boolean(node: &Node) -> bool {
    matches!(node.kind, Kind::Bool(true))
}
