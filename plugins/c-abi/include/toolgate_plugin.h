/*
 * toolgate plugin C ABI, version 1: the C spelling of plugin-api/src/abi.rs.
 *
 * A plugin exports one function, toolgate_plugin_entry, returning a pointer to a static
 * ToolgatePluginVTable that lives as long as the library is loaded. Everything structured
 * crosses as UTF-8 JSON; see the Rust module documentation for the full contract (who frees
 * what, thread safety, no unwinding across the boundary).
 *
 * The layout of every type here is checked against the Rust definitions by
 * plugins/c-abi/tests/c_abi.rs (sizes and field offsets, compiled by the C compiler).
 */
#ifndef TOOLGATE_PLUGIN_H
#define TOOLGATE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes (abi::ABI_VERSION). */
#define TOOLGATE_ABI_VERSION 1u

/* The name of the one symbol a plugin exports (abi::ENTRY_SYMBOL). */
#define TOOLGATE_ENTRY_SYMBOL "toolgate_plugin_entry"

/* Status codes every table function returns (abi::STATUS_*). */
#define TOOLGATE_STATUS_OK 0u
#define TOOLGATE_STATUS_ERROR 1u
#define TOOLGATE_STATUS_PANIC 2u
#define TOOLGATE_STATUS_INVALID_ARGUMENTS 3u

/* A borrowed UTF-8 string, valid for the duration of one call (abi::StrRef). */
typedef struct ToolgateStrRef {
    const uint8_t *ptr;
    size_t len;
} ToolgateStrRef;

/* A buffer the plugin allocates and the host gives back to free_buf (abi::OwnedBuf). */
typedef struct ToolgateOwnedBuf {
    uint8_t *ptr;
    size_t len;
} ToolgateOwnedBuf;

/* The host's progress callback (abi::ProgressFn). */
typedef void (*ToolgateProgressFn)(void *context, ToolgateStrRef message);

/* What a call sees of its host (abi::CallContext). cancel_flag points to one byte, 0 or 1,
 * that the host sets atomically (a Rust AtomicBool); NULL means never cancelled. */
typedef struct ToolgateCallContext {
    const volatile uint8_t *cancel_flag;
    ToolgateProgressFn progress; /* NULL when the host does not listen */
    void *progress_context;
} ToolgateCallContext;

/* The first fields of every version of the table (abi::VTableHeader). */
typedef struct ToolgateVTableHeader {
    uint32_t abi_version;
    uint32_t struct_size;
} ToolgateVTableHeader;

/* The table, version 1 (abi::PluginVTable). */
typedef struct ToolgatePluginVTable {
    ToolgateVTableHeader header;
    uint32_t (*manifest)(ToolgateOwnedBuf *out);
    uint32_t (*init)(ToolgateStrRef config, void **instance, ToolgateOwnedBuf *error);
    uint32_t (*call)(const void *instance, ToolgateStrRef tool, ToolgateStrRef arguments,
                     const ToolgateCallContext *context, ToolgateOwnedBuf *out);
    void (*destroy)(void *instance);
    void (*free_buf)(ToolgateOwnedBuf buf);
} ToolgatePluginVTable;

/* The entry point every plugin exports (abi::EntryFn). */
typedef const ToolgateVTableHeader *(*ToolgateEntryFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* TOOLGATE_PLUGIN_H */
