//! The control channel between the host and the template process.
//!
//! The template is a pristine, initialised worker that never runs user code. For each
//! program the host creates a fresh socket pair and sends the worker's end to the
//! template with [`TemplateRequest::Fork`] (as `SCM_RIGHTS`); the template forks a child
//! that inherits the initialised engine, hands it that socket, and answers
//! [`TemplateReply::Forked`] with the child's pid. The channel is a `SOCK_SEQPACKET`
//! pair, so each message (and the descriptor riding with it) arrives whole.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::frame::FrameError;
use crate::worker::{Engine, MissingLayer};

/// Largest control message, in bytes.
pub const MAX_CONTROL_BYTES: usize = 4096;

/// What the host asks of the template.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateRequest {
    /// Fork one worker; the worker's channel rides along as `SCM_RIGHTS`.
    Fork,
}

/// What the template answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateReply {
    /// Sent once, when the engine is initialised and the template accepts requests.
    Ready {
        /// The engine the template was built with.
        engine: Engine,
        /// Sandbox layers that are not active, each with the reason (empty unless the
        /// host allowed a weaker sandbox).
        #[serde(default)]
        missing_layers: Vec<MissingLayer>,
    },
    /// The template could not set itself up (for example, a sandbox layer failed) and exits.
    Failed {
        /// What failed and how to fix it.
        reason: String,
    },
    /// A worker was forked; `pid` is its pid in the host's pid namespace view.
    Forked {
        /// The worker's process id.
        pid: i32,
    },
    /// The request could not be served; the template stays up.
    Refused {
        /// What went wrong.
        reason: String,
    },
}

/// Sends one control message, with an optional descriptor attached.
///
/// On a non-blocking socket this fails with `WouldBlock` instead of waiting.
pub fn send_control<T: Serialize>(
    socket: BorrowedFd<'_>,
    message: &T,
    fd: Option<BorrowedFd<'_>>,
) -> Result<(), FrameError> {
    let payload = serde_json::to_vec(message).map_err(FrameError::Encode)?;
    if payload.len() > MAX_CONTROL_BYTES {
        return Err(FrameError::TooLarge { len: payload.len() as u64, max: MAX_CONTROL_BYTES as u32 });
    }
    let iov = [IoSlice::new(&payload)];
    let raw: Vec<RawFd> = fd.iter().map(|f| f.as_raw_fd()).collect();
    let cmsgs: Vec<ControlMessage<'_>> =
        if raw.is_empty() { Vec::new() } else { vec![ControlMessage::ScmRights(&raw)] };
    loop {
        match sendmsg::<()>(socket.as_raw_fd(), &iov, &cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(FrameError::Io(io::Error::from_raw_os_error(e as i32))),
        }
    }
}

/// Receives one control message and the descriptor attached to it, if any.
///
/// Received descriptors are close-on-exec. A message that arrives with more than one
/// descriptor is refused (the extra ones are closed).
pub fn recv_control<T: DeserializeOwned>(socket: BorrowedFd<'_>) -> Result<(T, Option<OwnedFd>), FrameError> {
    let mut buf = vec![0u8; MAX_CONTROL_BYTES + 1];
    let mut cmsg_space = nix::cmsg_space!([RawFd; 4]);
    let (len, truncated, fds) = loop {
        let mut iov = [IoSliceMut::new(&mut buf)];
        match recvmsg::<()>(socket.as_raw_fd(), &mut iov, Some(&mut cmsg_space), MsgFlags::MSG_CMSG_CLOEXEC) {
            Ok(msg) => {
                let mut fds = Vec::new();
                if let Ok(cmsgs) = msg.cmsgs() {
                    for c in cmsgs {
                        if let ControlMessageOwned::ScmRights(list) = c {
                            // SAFETY: the kernel just installed these descriptors in this
                            // process for us; nothing else owns them.
                            fds.extend(list.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
                        }
                    }
                }
                let truncated = msg.flags.intersects(MsgFlags::MSG_TRUNC | MsgFlags::MSG_CTRUNC);
                break (msg.bytes, truncated, fds);
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(FrameError::Io(io::Error::from_raw_os_error(e as i32))),
        }
    };
    if len == 0 {
        return Err(FrameError::Closed);
    }
    if truncated || len > MAX_CONTROL_BYTES {
        return Err(FrameError::TooLarge { len: len as u64, max: MAX_CONTROL_BYTES as u32 });
    }
    if fds.len() > 1 {
        return Err(FrameError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} descriptors attached, expected at most one", fds.len()),
        )));
    }
    let message = serde_json::from_slice(&buf[..len]).map_err(FrameError::Decode)?;
    Ok((message, fds.into_iter().next()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    fn seqpacket() -> (OwnedFd, OwnedFd) {
        socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC).unwrap()
    }

    #[test]
    fn a_descriptor_rides_with_the_request() {
        let (host, template) = seqpacket();
        let (mut mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        send_control(host.as_fd(), &TemplateRequest::Fork, Some(theirs.as_fd())).unwrap();
        drop(theirs);
        let (req, fd) = recv_control::<TemplateRequest>(template.as_fd()).unwrap();
        assert!(matches!(req, TemplateRequest::Fork));
        let mut received = std::os::unix::net::UnixStream::from(fd.unwrap());
        received.write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        mine.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
    }

    #[test]
    fn replies_without_descriptors_and_a_closed_peer() {
        let (host, template) = seqpacket();
        send_control(template.as_fd(), &TemplateReply::Forked { pid: 12 }, None).unwrap();
        let (reply, fd) = recv_control::<TemplateReply>(host.as_fd()).unwrap();
        assert!(matches!(reply, TemplateReply::Forked { pid: 12 }));
        assert!(fd.is_none());
        drop(template);
        assert!(matches!(recv_control::<TemplateReply>(host.as_fd()), Err(FrameError::Closed)));
    }

    #[test]
    fn garbage_and_oversized_control_messages_are_errors() {
        let (host, template) = seqpacket();
        nix::unistd::write(&template, b"not json").unwrap();
        assert!(matches!(recv_control::<TemplateReply>(host.as_fd()), Err(FrameError::Decode(_))));
        nix::unistd::write(&template, &vec![b' '; MAX_CONTROL_BYTES + 100]).unwrap();
        assert!(matches!(recv_control::<TemplateReply>(host.as_fd()), Err(FrameError::TooLarge { .. })));
    }
}
