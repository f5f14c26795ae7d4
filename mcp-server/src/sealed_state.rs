//! Sealing a 2026-07-28 client's `requestState`: the sealer [`super::rounds`] puts the
//! state of every paused program through, so that the client can neither read nor
//! change what it carries back.
//!
//! 1. **The key.** The request-state key (`CODEMODE_STATE_KEY`, shared by every
//!    replica, or one of this process) is never used as it is: HKDF-SHA256 derives
//!    from it a ChaCha20-Poly1305 key under a label of this one purpose
//!    ([`KEY_LABEL`]), so the same secret can never serve two purposes.
//! 2. **Sealing** ([`StateSealer::seal`]): the payload and its expiry (Unix
//!    milliseconds) are encrypted and authenticated under a fresh random 96-bit nonce
//!    (2^32 states per key keep the chance of a repeated nonce below 2^-33); the
//!    associated data is the caller's binding, which the state does not carry, so it
//!    opens for that caller alone. The state is [`PREFIX`] and the URL-safe base64 of
//!    nonce, ciphertext and tag: to the client, random bytes.
//! 3. **Opening** ([`StateSealer::open`]): a state that is not in this form, has a
//!    changed byte, belongs to another caller, was sealed with another key, or is past
//!    its expiry is [`Refused`]. The reason is for the server's log; the client is
//!    told the same thing in every case (see [`super::rounds::Rounds::resume`]).
//!
//! rmcp's `RequestStateCodec` authenticates its states (HMAC-SHA256) but leaves the
//! payload readable, and takes no other sealer: hence this module, with ring's AEAD.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::hkdf;

/// How a sealed state begins (the format's version).
pub const PREFIX: &str = "cs1.";
/// The HKDF salt: fixed, public, this application's.
const KEY_SALT: &[u8] = b"codemode request state";
/// The HKDF label of the encryption key: what the derived key is for, and nothing else.
pub const KEY_LABEL: &[u8] = b"codemode/request-state/chacha20-poly1305/v1";
/// Bytes of the expiry at the front of the plaintext.
const EXPIRY_LEN: usize = 8;
/// The longest state opened at all (codemode's own are about 120 characters).
const MAX_STATE_CHARS: usize = 4096;

/// Why a state was not sealed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    /// No randomness for the nonce.
    #[error("no randomness for the request state's nonce: {0}")]
    Entropy(String),
    /// HKDF refused to derive the key (it cannot for this length).
    #[error("the request-state encryption key cannot be derived")]
    Key,
    /// ring refused to encrypt (the payload is far too large).
    #[error("the request state could not be encrypted")]
    Encrypt,
}

/// Why a state did not open (for the server's log only: the client is told the same
/// thing whatever the reason).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    /// Not a state in codemode's form (prefix, base64, length).
    #[error("it is not a sealed request state (wrong form or length)")]
    Malformed,
    /// Forged, changed, another caller's, or sealed with another key.
    #[error("it does not open with this key for this caller (forged, changed, another caller's, or sealed with another key)")]
    Unopened,
    /// Its time is over.
    #[error("it has expired")]
    Expired,
}

/// Seals and opens request states with a key derived from the request-state key.
pub struct StateSealer {
    key: LessSafeKey,
}

impl StateSealer {
    /// A sealer whose key is derived from `secret` (the request-state key).
    pub fn new(secret: &[u8]) -> Result<Self, SealError> {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, KEY_SALT).extract(secret);
        let okm = prk.expand(&[KEY_LABEL], &CHACHA20_POLY1305).map_err(|_| SealError::Key)?;
        Ok(Self { key: LessSafeKey::new(UnboundKey::from(okm)) })
    }

    /// `payload`, sealed for the caller `binding`, valid for `ttl`.
    pub fn seal(&self, payload: &[u8], binding: &[u8], ttl: Duration) -> Result<String, SealError> {
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self.seal_until(payload, binding, now_ms().saturating_add(ttl))
    }

    /// `payload`, sealed for `binding`, valid until `expires` (Unix milliseconds).
    fn seal_until(&self, payload: &[u8], binding: &[u8], expires: u64) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| SealError::Entropy(e.to_string()))?;
        let mut in_out = Vec::with_capacity(EXPIRY_LEN + payload.len() + CHACHA20_POLY1305.tag_len());
        in_out.extend_from_slice(&expires.to_be_bytes());
        in_out.extend_from_slice(payload);
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(binding), &mut in_out)
            .map_err(|_| SealError::Encrypt)?;
        let mut sealed = Vec::with_capacity(NONCE_LEN + in_out.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&in_out);
        Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(sealed)))
    }

    /// The payload of `state` when it was sealed by this key for `binding` and has not
    /// expired.
    pub fn open(&self, state: &str, binding: &[u8]) -> Result<Vec<u8>, Refused> {
        self.open_at(state, binding, now_ms())
    }

    /// [`Self::open`] at the time `now` (Unix milliseconds).
    fn open_at(&self, state: &str, binding: &[u8], now: u64) -> Result<Vec<u8>, Refused> {
        if state.len() > MAX_STATE_CHARS {
            return Err(Refused::Malformed);
        }
        let encoded = state.strip_prefix(PREFIX).ok_or(Refused::Malformed)?;
        let mut sealed = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| Refused::Malformed)?;
        if sealed.len() < NONCE_LEN + EXPIRY_LEN + CHACHA20_POLY1305.tag_len() {
            return Err(Refused::Malformed);
        }
        let (nonce, rest) = sealed.split_at_mut(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Refused::Malformed)?;
        let plain = self.key.open_in_place(nonce, Aad::from(binding), rest).map_err(|_| Refused::Unopened)?;
        let (expires, payload) = plain.split_first_chunk::<EXPIRY_LEN>().ok_or(Refused::Malformed)?;
        if u64::from_be_bytes(*expires) <= now {
            return Err(Refused::Expired);
        }
        Ok(payload.to_vec())
    }
}

/// Now, in Unix milliseconds.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    /// HKDF-SHA256 by its steps (RFC 5869: extract, then the one block of expand a
    /// 32-byte key needs), to check ring's derivation against.
    fn derive_by_hand(secret: &[u8]) -> UnboundKey {
        use ring::hmac;
        let prk = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, KEY_SALT), secret);
        let mut block = hmac::Context::with_key(&hmac::Key::new(hmac::HMAC_SHA256, prk.as_ref()));
        block.update(KEY_LABEL);
        block.update(&[1]);
        UnboundKey::new(&CHACHA20_POLY1305, block.sign().as_ref()).unwrap()
    }

    fn decoded(state: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(state.strip_prefix(PREFIX).unwrap()).unwrap()
    }

    #[test]
    fn a_sealed_state_opens_for_its_caller_and_shows_nothing_of_its_payload() {
        let sealer = StateSealer::new(&[7; 32]).unwrap();
        let payload = br#"{"run":"0123456789abcdef","replica":"http://10.0.0.1:8931/mcp"}"#;
        let state = sealer.seal(payload, b"caller a", HOUR).unwrap();
        assert!(state.starts_with("cs1."));
        assert_eq!(sealer.open(&state, b"caller a").unwrap(), payload);
        let bytes = decoded(&state);
        assert_eq!(bytes.len(), NONCE_LEN + EXPIRY_LEN + payload.len() + 16);
        for needle in [&b"run"[..], b"replica", b"10.0.0.1", b"0123456789abcdef"] {
            assert!(!bytes.windows(needle.len()).any(|w| w == needle), "{needle:?} in clear");
        }
        // Sealed twice, the same payload looks different (a fresh nonce each time).
        assert_ne!(sealer.seal(payload, b"caller a", HOUR).unwrap(), state);
    }

    #[test]
    fn forged_changed_foreign_and_expired_states_are_refused() {
        let sealer = StateSealer::new(&[7; 32]).unwrap();
        let state = sealer.seal(b"payload", b"caller a", HOUR).unwrap();
        assert_eq!(sealer.open(&state, b"caller b"), Err(Refused::Unopened));
        assert_eq!(StateSealer::new(&[8; 32]).unwrap().open(&state, b"caller a"), Err(Refused::Unopened));
        // Every byte changed in turn: none opens.
        let bytes = decoded(&state);
        for at in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[at] ^= 0x01;
            let changed = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(changed));
            assert_eq!(sealer.open(&changed, b"caller a"), Err(Refused::Unopened), "byte {at}");
        }
        for malformed in ["", "cs1.", "cs1.!!!!", "rs1.e30.AAAA", "cs1.AAAA", &"A".repeat(5000)] {
            assert_eq!(sealer.open(malformed, b"caller a"), Err(Refused::Malformed), "{malformed:.20}");
        }
        let expiring = sealer.seal_until(b"payload", b"caller a", 1_000).unwrap();
        assert_eq!(sealer.open_at(&expiring, b"caller a", 999).unwrap(), b"payload");
        assert_eq!(sealer.open_at(&expiring, b"caller a", 1_000), Err(Refused::Expired));
    }

    #[test]
    fn the_key_is_derived_for_this_purpose_alone() {
        // The same secret seals alike on every replica (states open across them).
        let state = StateSealer::new(&[9; 48]).unwrap().seal(b"x", b"c", HOUR).unwrap();
        assert_eq!(StateSealer::new(&[9; 48]).unwrap().open(&state, b"c").unwrap(), b"x");
        // The derived key is HKDF's, the same as by the steps by hand, and not the secret.
        let secret = [9u8; 32];
        let by_hand = LessSafeKey::new(derive_by_hand(&secret));
        let mut in_out = b"x".to_vec();
        let nonce = [0u8; NONCE_LEN];
        by_hand.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(b"c"), &mut in_out).unwrap();
        let sealer = StateSealer::new(&secret).unwrap();
        let opened = sealer.key.open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(b"c"), &mut in_out);
        assert_eq!(opened.unwrap(), b"x");
        let raw = LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &secret).unwrap());
        let mut in_out = b"x".to_vec();
        raw.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(b"c"), &mut in_out).unwrap();
        assert!(sealer.key.open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(b"c"), &mut in_out).is_err());
    }
}
