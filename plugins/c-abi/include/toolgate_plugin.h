/*
 * toolgate plugin C ABI, version 1: the C spelling of plugin-api/src/abi.rs.
 *
 * A plugin exports one function, toolgate_plugin_entry, returning a pointer to a static
 * ToolgatePluginVTable that lives as long as the library is loaded. Everything structured
 * crosses as UTF-8 JSON; see the Rust module documentation for the full contract (who frees
 * what, thread safety, no unwinding across the boundary).
 *
 * The JSON, in short (plugin-api's Manifest and Part have the whole of it):
 *   manifest: {"name": "...", "version": "...", "capabilities": {...},
 *              "tools": [{"name": "...", "description": "...", "parameters": {schema},
 *                         "title": "...", "annotations": {...}, "output_schema": {schema}}]}
 *   a call's output: [{"type": "text", "text": "..."},
 *                     {"type": "image", "mime_type": "image/png", "data": "<base64>"},
 *                     {"type": "structured", "value": {...}}]
 * "title", "annotations", "output_schema" and the "structured" part are the second JSON
 * revision of ABI 1: the table is unchanged, a first-revision host ignores the three manifest
 * fields and refuses a "structured" part, and a plugin that uses none of them works with every
 * host. A tool that declares "output_schema" returns one "structured" part matching it with
 * every success; the host turns one that does not into the error invalid_structured_content.
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

/* A buffer the plugin allocates and the host gives back to free_buf (abi::OwnedBuf). The host
 * reads none longer than its limit (bounds::*: 4 MiB for a manifest or a load-time message,
 * 256 MiB for a call's output or a streamed chunk, 64 KiB for a progress message); a longer
 * one is refused unread. */
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

/* The host's chunk callback for streamed text (abi::ChunkFn): returns TOOLGATE_CHUNK_CONTINUE,
 * or TOOLGATE_CHUNK_STOP when the host wants no more output. */
typedef uint32_t (*ToolgateChunkFn)(void *context, ToolgateStrRef text);
#define TOOLGATE_CHUNK_CONTINUE 0u
#define TOOLGATE_CHUNK_STOP 1u

/* A call context with a chunk callback (abi::StreamContext), for call_streaming. */
typedef struct ToolgateStreamContext {
    ToolgateCallContext call;
    ToolgateChunkFn chunk; /* NULL when the host takes no chunks */
    void *chunk_context;
} ToolgateStreamContext;

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
    /* Added after the first release of ABI 1, read only when struct_size covers it; NULL (or a
     * table that ends before it) means the tool is called through `call`. */
    uint32_t (*call_streaming)(const void *instance, ToolgateStrRef tool,
                               ToolgateStrRef arguments, const ToolgateStreamContext *context,
                               ToolgateOwnedBuf *out);
} ToolgatePluginVTable;

/* The entry point every plugin exports (abi::EntryFn). */
typedef const ToolgateVTableHeader *(*ToolgateEntryFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* TOOLGATE_PLUGIN_H */
