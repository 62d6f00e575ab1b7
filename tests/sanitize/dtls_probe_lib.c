/* A library with 8 bytes of thread-local storage, loaded with dlopen by dtls_probe.c: its TLS block
 * is "dynamic" (malloc'ed by ld.so on a thread's first access, through __tls_get_addr), like that of
 * libclang-cpp.so.15 (also 8 bytes) which PoCL loads. */
__thread long sf_dtls_probe_var;

long *sf_dtls_probe_addr(void) { return &sf_dtls_probe_var; }
