/* bcryptprimitives.dll for Wine 8, which lacks it: Rust's standard library on
 * Windows takes its random bytes from ProcessPrng there (Windows 10 and
 * later). Built by tests/windows.rs with mingw-w64 and put beside the binary
 * under test; Windows itself has the real one. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
