//! Puts the locked versions of the QUIC crates into the binary (`version`, the `stack`
//! object of the client's JSON line), so that they always say what was built.

fn main() {
    dclab_common::lockfile::emit_versions(&[
        ("quinn", "DCLAB_V_QUINN"),
        ("quinn-proto", "DCLAB_V_QUINN_PROTO"),
        ("h3", "DCLAB_V_H3"),
        ("h3-quinn", "DCLAB_V_H3_QUINN"),
        ("rustls", "DCLAB_V_RUSTLS"),
    ]);
}
