//! TLS 1.3 with ring for both ends: the server's certificate and key from PEM files, and a
//! client that trusts exactly the certificate it is given. Each program wraps the rustls
//! configuration in its QUIC library's own type.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::files::FileKeyLog;

pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn key_log(keylog: Option<&Path>) -> Result<Option<Arc<FileKeyLog>>, String> {
    keylog
        .map(|path| FileKeyLog::open(path).map_err(|e| format!("--keylog {}: {e}", path.display())))
        .transpose()
}

/// The server's configuration: `--cert` and `--key`, the ALPN, no session tickets (the
/// clients here never resume), the secrets into `keylog`.
pub fn server(
    cert: &Path,
    key: &Path,
    alpn: &[u8],
    keylog: Option<&Path>,
) -> Result<rustls::ServerConfig, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| format!("--cert {}: {e}", cert.display()))?;
    let key =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("--key {}: {e}", key.display()))?;
    let mut tls = rustls::ServerConfig::builder_with_provider(crypto_provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("tls: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("--cert/--key: {e}"))?;
    tls.alpn_protocols = vec![alpn.to_vec()];
    // No resumption is offered by these clients: no session tickets to send.
    tls.send_tls13_tickets = 0;
    if let Some(log) = key_log(keylog)? {
        tls.key_log = log;
    }
    Ok(tls)
}

/// The client's configuration: trusts what `ca` holds (`PinnedVerifier`), the ALPN, a full
/// handshake on every connection (no session cache shared between them), the secrets into
/// `keylog`.
pub fn client(
    ca: &Path,
    alpn: &[u8],
    keylog: Option<&Path>,
) -> Result<rustls::ClientConfig, String> {
    let provider = crypto_provider();
    let pinned: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(ca)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| format!("--ca {}: {e}", ca.display()))?;
    if pinned.is_empty() {
        return Err(format!("--ca {}: no certificate", ca.display()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for c in &pinned {
        let _ = roots.add(c.clone()); // one unusable as a root is still pinned
    }
    let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .ok();
    let verifier = Arc::new(PinnedVerifier {
        pinned,
        webpki,
        provider: provider.clone(),
    });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("tls: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    tls.resumption = rustls::client::Resumption::disabled();
    if let Some(log) = key_log(keylog)? {
        tls.key_log = log;
    }
    Ok(tls)
}

/// Trusts exactly what --ca holds: a chain to it as a root (webpki), or the very
/// certificate as the server's. The second is needed for dclab's certificates
/// (dclab/testbed/certs.py): self-signed with CA:TRUE, which webpki refuses as an end
/// entity (CaUsedAsEndEntity). The handshake signature is checked either way.
#[derive(Debug)]
struct PinnedVerifier {
    pinned: Vec<CertificateDer<'static>>,
    webpki: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let chain = match &self.webpki {
            Some(v) => {
                v.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            }
            None => Err(rustls::Error::General("no usable root in --ca".into())),
        };
        match chain {
            Ok(ok) => Ok(ok),
            Err(_)
                if self
                    .pinned
                    .iter()
                    .any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
