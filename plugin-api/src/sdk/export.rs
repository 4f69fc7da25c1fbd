//! [`export_plugin!`](crate::export_plugin): the one macro a plugin library calls.

/// Exports a plugin: writes the `toolgate_plugin_entry` symbol and the ABI table around your
/// tools.
///
/// ```text
/// toolgate_plugin_api::export_plugin! {
///     name: "testkit",                     // the plugin's name
///     version: env!("CARGO_PKG_VERSION"),  // its version
///     capabilities: caps(),                // optional: what it needs (`Capabilities`)
///     config_paths: ["root"],              // optional: config keys that hold paths
///     init: init,                          // optional: fn(Config) -> Result<State, E: Display>
///     tools: [                             // each a `Tool<State>`
///         Tool::new("echo", echo).description("...").parameters(json!({...})),
///     ],
/// }
/// ```
///
/// Use it once per library, at the top level of the crate. See the crate documentation for a
/// complete plugin. `name` must be a constant string (a literal, `env!`).
///
/// Besides the entry symbol, it defines `pub static TOOLGATE_BUILTIN: Builtin`, hidden: the
/// same plugin for a program that links the crate in ([`crate::builtin`]).
#[macro_export]
macro_rules! export_plugin {
    (
        name: $name:expr,
        version: $version:expr,
        $(capabilities: $capabilities:expr,)?
        $(config_paths: $config_paths:expr,)?
        $(init: $init:expr,)?
        tools: [ $($tool:expr),* $(,)? ] $(,)?
    ) => {
        /// This plugin as a host program links it in (toolgate's built-in plugins): the same
        /// table the library's `toolgate_plugin_entry` returns.
        #[doc(hidden)]
        pub static TOOLGATE_BUILTIN: $crate::Builtin = {
            struct ToolgatePlugin;

            impl $crate::__private::PluginProvider for ToolgatePlugin {
                fn plugin() -> &'static dyn $crate::__private::ErasedPlugin {
                    static PLUGIN: ::std::sync::OnceLock<
                        ::std::boxed::Box<dyn $crate::__private::ErasedPlugin>,
                    > = ::std::sync::OnceLock::new();
                    &**PLUGIN.get_or_init(|| {
                        ::std::boxed::Box::new(
                            $crate::Plugin::new($name, $version)
                                $(.init($init))?
                                $(.capabilities($capabilities))?
                                $(.config_paths($config_paths))?
                                $(.tool($tool))*
                        )
                    })
                }
            }

            static VTABLE: $crate::abi::PluginVTable =
                $crate::__private::vtable::<ToolgatePlugin>();

            /// The toolgate plugin entry point: returns the ABI table.
            #[unsafe(no_mangle)]
            pub extern "C" fn toolgate_plugin_entry() -> *const $crate::abi::VTableHeader {
                (&raw const VTABLE).cast::<$crate::abi::VTableHeader>()
            }

            $crate::__private::builtin($name, &VTABLE)
        };
    };
}
