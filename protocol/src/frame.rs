//! Length-prefixed frames: a 4-byte big-endian payload length, then the payload.
//!
//! The reader checks the announced length against its maximum before it allocates,
//! and tells apart the ways a frame can go wrong: the peer closed between frames
//! ([`FrameError::Closed`]), the peer closed inside a frame ([`FrameError::Truncated`]),
//! the frame is larger than allowed ([`FrameError::TooLarge`]) or its payload is not a
//! message ([`FrameError::Decode`]). None of them panics and none of them waits for
//! bytes that cannot come.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Width of the length prefix in bytes.
pub const HEADER_BYTES: usize = 4;

/// The largest payload either side accepts by default: 64 MiB.
///
/// Large enough for a program's result at its own cap plus JSON escaping; small
/// enough that a garbage header cannot make the reader allocate gigabytes.
pub const MAX_FRAME_BYTES: u32 = 64 * 1024 * 1024;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the stream cleanly, between two frames.
    #[error("the peer closed the channel")]
    Closed,
    /// The peer closed the stream in the middle of a frame.
    #[error("the peer closed the channel mid-frame: {part} has {received} of {expected} bytes")]
    Truncated {
        /// Which part of the frame was cut: "header" or "payload".
        part: &'static str,
        /// Bytes the frame announced for that part.
        expected: usize,
        /// Bytes that arrived before the stream ended.
        received: usize,
    },
    /// The frame announces a payload larger than the reader accepts.
    #[error("frame of {len} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// Announced payload length.
        len: u64,
        /// The reader's limit.
        max: u32,
    },
    /// The payload is not a valid message.
    #[error("undecodable frame: {0}")]
    Decode(#[source] serde_json::Error),
    /// The message could not be encoded (a bug, or a value serde refuses).
    #[error("unencodable message: {0}")]
    Encode(#[source] serde_json::Error),
    /// The operating system refused the read or write.
    #[error("channel i/o failed: {0}")]
    Io(#[from] io::Error),
}

impl FrameError {
    /// True when the peer is gone (closed between or inside a frame, or reset).
    pub fn is_disconnect(&self) -> bool {
        match self {
            FrameError::Closed | FrameError::Truncated { .. } => true,
            FrameError::Io(e) => matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof
            ),
            _ => false,
        }
    }
}

/// Encodes one message as a complete frame (header and payload) in one buffer, so
/// that it can be written with a single call.
pub fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>, FrameError> {
    let mut buf = vec![0u8; HEADER_BYTES];
    serde_json::to_writer(&mut buf, message).map_err(FrameError::Encode)?;
    let len = buf.len() - HEADER_BYTES;
    let len = u32::try_from(len).map_err(|_| FrameError::TooLarge { len: len as u64, max: u32::MAX })?;
    buf[..HEADER_BYTES].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}

/// Decodes a frame payload.
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(payload).map_err(FrameError::Decode)
}

/// Checks an announced payload length against the reader's limit.
pub fn check_len(header: [u8; HEADER_BYTES], max: u32) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header);
    if len > max {
        return Err(FrameError::TooLarge { len: u64::from(len), max });
    }
    Ok(len as usize)
}

/// Writes one message as a frame.
pub fn write_frame<W: Write, T: Serialize>(writer: &mut W, message: &T) -> Result<(), FrameError> {
    let buf = encode(message)?;
    writer.write_all(&buf)?;
    Ok(())
}

/// Reads one message, refusing payloads over `max` bytes.
pub fn read_frame<R: Read, T: DeserializeOwned>(reader: &mut R, max: u32) -> Result<T, FrameError> {
    let mut header = [0u8; HEADER_BYTES];
    let got = read_full(reader, &mut header)?;
    if got == 0 {
        return Err(FrameError::Closed);
    }
    if got < HEADER_BYTES {
        return Err(FrameError::Truncated { part: "header", expected: HEADER_BYTES, received: got });
    }
    let len = check_len(header, max)?;
    let mut payload = vec![0u8; len];
    let got = read_full(reader, &mut payload)?;
    if got < len {
        return Err(FrameError::Truncated { part: "payload", expected: len, received: got });
    }
    decode(&payload)
}

/// Reads until `buf` is full or the stream ends; returns how many bytes arrived.
fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<usize, FrameError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Ping {
        n: u32,
        text: String,
    }

    fn ping() -> Ping {
        Ping { n: 7, text: "héllo".into() }
    }

    #[test]
    fn round_trips_a_message() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &ping()).unwrap();
        write_frame(&mut buf, &Ping { n: 8, text: String::new() }).unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame::<_, Ping>(&mut r, MAX_FRAME_BYTES).unwrap(), ping());
        assert_eq!(read_frame::<_, Ping>(&mut r, MAX_FRAME_BYTES).unwrap().n, 8);
        assert!(matches!(read_frame::<_, Ping>(&mut r, MAX_FRAME_BYTES), Err(FrameError::Closed)));
    }

    #[test]
    fn header_is_big_endian_payload_length() {
        let buf = encode(&ping()).unwrap();
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        assert_eq!(len, buf.len() - HEADER_BYTES);
    }

    #[test]
    fn clean_eof_is_closed() {
        let mut r: &[u8] = &[];
        assert!(matches!(read_frame::<_, Ping>(&mut r, MAX_FRAME_BYTES), Err(FrameError::Closed)));
    }

    #[test]
    fn peer_closed_inside_header_is_truncated() {
        let mut r: &[u8] = &[0, 0];
        let err = read_frame::<_, Ping>(&mut r, MAX_FRAME_BYTES).unwrap_err();
        assert!(matches!(err, FrameError::Truncated { part: "header", expected: 4, received: 2 }), "{err}");
        assert!(err.is_disconnect());
    }

    #[test]
    fn peer_closed_inside_payload_is_truncated() {
        let buf = encode(&ping()).unwrap();
        let cut = &buf[..buf.len() - 3];
        let mut r = cut;
        let err = read_frame::<_, Ping>(&mut r, MAX_FRAME_BYTES).unwrap_err();
        let expected = buf.len() - HEADER_BYTES;
        match err {
            FrameError::Truncated { part, expected: e, received } => {
                assert_eq!(part, "payload");
                assert_eq!(e, expected);
                assert_eq!(received, expected - 3);
            }
            other => panic!("expected Truncated, got {other}"),
        }
    }

    #[test]
    fn oversized_frame_is_refused_before_allocation() {
        // Announces 4 GiB - 1 and sends nothing more: the reader must refuse from the header alone.
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        let err = read_frame::<_, Ping>(&mut r, 1024).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { len: 0xffff_ffff, max: 1024 }), "{err}");
        assert_eq!(err.to_string(), "frame of 4294967295 bytes exceeds the 1024-byte limit");
    }

    #[test]
    fn garbage_payload_is_a_decode_error() {
        let mut buf = 5u32.to_be_bytes().to_vec();
        buf.extend_from_slice(b"{nope");
        let mut r = &buf[..];
        assert!(matches!(read_frame::<_, Ping>(&mut r, MAX_FRAME_BYTES), Err(FrameError::Decode(_))));
    }

    #[test]
    fn wrong_shape_is_a_decode_error() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &serde_json::json!({"n": "seven"})).unwrap();
        let mut r = &buf[..];
        assert!(matches!(read_frame::<_, Ping>(&mut r, MAX_FRAME_BYTES), Err(FrameError::Decode(_))));
    }

    #[test]
    fn io_errors_are_reported_not_retried_forever() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
            }
        }
        let err = read_frame::<_, Ping>(&mut Broken, MAX_FRAME_BYTES).unwrap_err();
        assert!(matches!(err, FrameError::Io(_)));
        assert!(err.is_disconnect());
    }
}
