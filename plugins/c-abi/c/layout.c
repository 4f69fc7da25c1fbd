/* Prints the size of each ABI type and the offset of each field, one "name value" per line,
 * as the C compiler lays them out; the test compares them with Rust's layout. */
#include <stdio.h>
#include <stddef.h>

#include "toolgate_plugin.h"

#define SIZE(t) printf("size %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offset %s.%s %zu\n", #t, #f, offsetof(t, f))

int main(void) {
    SIZE(ToolgateStrRef);
    OFF(ToolgateStrRef, ptr);
    OFF(ToolgateStrRef, len);
    SIZE(ToolgateOwnedBuf);
    OFF(ToolgateOwnedBuf, ptr);
    OFF(ToolgateOwnedBuf, len);
    SIZE(ToolgateCallContext);
    OFF(ToolgateCallContext, cancel_flag);
    OFF(ToolgateCallContext, progress);
    OFF(ToolgateCallContext, progress_context);
    SIZE(ToolgateVTableHeader);
    OFF(ToolgateVTableHeader, abi_version);
    OFF(ToolgateVTableHeader, struct_size);
    SIZE(ToolgatePluginVTable);
    OFF(ToolgatePluginVTable, header);
    OFF(ToolgatePluginVTable, manifest);
    OFF(ToolgatePluginVTable, init);
    OFF(ToolgatePluginVTable, call);
    OFF(ToolgatePluginVTable, destroy);
    OFF(ToolgatePluginVTable, free_buf);
    OFF(ToolgatePluginVTable, call_streaming);
    SIZE(ToolgateStreamContext);
    OFF(ToolgateStreamContext, call);
    OFF(ToolgateStreamContext, chunk);
    OFF(ToolgateStreamContext, chunk_context);
    printf("value TOOLGATE_CHUNK_CONTINUE %u\n", TOOLGATE_CHUNK_CONTINUE);
    printf("value TOOLGATE_CHUNK_STOP %u\n", TOOLGATE_CHUNK_STOP);
    printf("value TOOLGATE_ABI_VERSION %u\n", TOOLGATE_ABI_VERSION);
    printf("value TOOLGATE_STATUS_OK %u\n", TOOLGATE_STATUS_OK);
    printf("value TOOLGATE_STATUS_ERROR %u\n", TOOLGATE_STATUS_ERROR);
    printf("value TOOLGATE_STATUS_PANIC %u\n", TOOLGATE_STATUS_PANIC);
    printf("value TOOLGATE_STATUS_INVALID_ARGUMENTS %u\n", TOOLGATE_STATUS_INVALID_ARGUMENTS);
    printf("name TOOLGATE_ENTRY_SYMBOL %s\n", TOOLGATE_ENTRY_SYMBOL);
    return 0;
}
