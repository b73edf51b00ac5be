//! Puts the locked versions of the QUIC crates into the binary (`version`, the `stack`
//! object of the client's JSON line), so that they always say what was built.

fn main() {
    dclab_common::lockfile::emit_versions(&[
        ("noq", "DCLAB_V_NOQ"),
        ("noq-proto", "DCLAB_V_NOQ_PROTO"),
        ("noq-udp", "DCLAB_V_NOQ_UDP"),
        ("rustls", "DCLAB_V_RUSTLS"),
    ]);
}
