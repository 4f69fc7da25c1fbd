//! [`export_plugin!`](crate::export_plugin): the one macro a plugin library calls.

/// Exports a plugin: writes the `toolgate_plugin_entry` symbol and the ABI table around your
/// tools.
///
/// ```text
/// toolgate_plugin_api::export_plugin! {
///     name: "testkit",                     // the plugin's name
///     version: env!("CARGO_PKG_VERSION"),  // its version
///     init: init,                          // optional: fn(Config) -> Result<State, E: Display>
///     tools: [                             // each a `Tool<State>`
///         Tool::new("echo", echo).description("...").parameters(json!({...})),
///     ],
/// }
/// ```
///
/// Use it once per library, at the top level of the crate. See the crate documentation for a
/// complete plugin.
#[macro_export]
macro_rules! export_plugin {
    (
        name: $name:expr,
        version: $version:expr,
        $(capabilities: $capabilities:expr,)?
        $(init: $init:expr,)?
        tools: [ $($tool:expr),* $(,)? ] $(,)?
    ) => {
        const _: () = {
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
        };
    };
}
