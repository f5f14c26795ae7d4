//! Role-named ends of the worker channel (a Unix stream socket pair).
//!
//! The host holds a [`HostChannel`] and can only send [`HostToWorker`] and receive
//! [`WorkerToHost`]; the worker holds a [`WorkerChannel`] with the mirror image. A
//! message of the wrong direction does not type-check on the sender and fails to
//! decode on the receiver.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream as StdUnixStream;

use crate::frame::{self, FrameError};
use crate::message::{HostToWorker, WorkerToHost};

/// The host's end of one worker's channel.
#[cfg(feature = "tokio")]
pub struct HostChannel {
    stream: tokio::net::UnixStream,
    max_frame: u32,
}

#[cfg(feature = "tokio")]
impl HostChannel {
    /// Wraps the host's end of a socket pair. Must be called inside a tokio runtime.
    pub fn new(fd: OwnedFd, max_frame: u32) -> io::Result<Self> {
        let std = StdUnixStream::from(fd);
        std.set_nonblocking(true)?;
        Ok(Self { stream: tokio::net::UnixStream::from_std(std)?, max_frame })
    }

    /// Splits the channel so that one task can read while others write.
    pub fn split(self) -> (FromWorker, ToWorker) {
        let (r, w) = self.stream.into_split();
        (FromWorker { reader: r, max_frame: self.max_frame }, ToWorker { writer: w })
    }
}

/// Receives what a worker sends.
#[cfg(feature = "tokio")]
pub struct FromWorker {
    reader: tokio::net::unix::OwnedReadHalf,
    max_frame: u32,
}

#[cfg(feature = "tokio")]
impl FromWorker {
    /// Waits for the worker's next message.
    pub async fn recv_from_worker(&mut self) -> Result<WorkerToHost, FrameError> {
        frame::nonblocking::read_frame(&mut self.reader, self.max_frame).await
    }
}

/// Sends to a worker.
#[cfg(feature = "tokio")]
pub struct ToWorker {
    writer: tokio::net::unix::OwnedWriteHalf,
}

#[cfg(feature = "tokio")]
impl ToWorker {
    /// Sends one message to the worker.
    pub async fn send_to_worker(&mut self, message: &HostToWorker) -> Result<(), FrameError> {
        frame::nonblocking::write_frame(&mut self.writer, message).await
    }
}

/// The worker's end of its channel.
///
/// Sends are synchronous (a JavaScript tool call writes its frame before the call
/// returns its promise) and survive the socket being in non-blocking mode, which it is
/// once the worker's event loop also reads from it.
pub struct WorkerChannel {
    stream: StdUnixStream,
    max_frame: u32,
}

impl WorkerChannel {
    /// Wraps the worker's end of a socket pair.
    pub fn new(fd: OwnedFd, max_frame: u32) -> Self {
        Self { stream: StdUnixStream::from(fd), max_frame }
    }

    /// Blocks until the host's next message (used before the event loop runs).
    pub fn recv_from_host_blocking(&mut self) -> Result<HostToWorker, FrameError> {
        frame::read_frame(&mut self.stream, self.max_frame)
    }

    /// Sends one message to the host, waiting for socket space if needed.
    pub fn send_to_host(&mut self, message: &WorkerToHost) -> Result<(), FrameError> {
        let buf = frame::encode(message)?;
        write_all_waiting(&mut self.stream, &buf)?;
        Ok(())
    }

    /// A second handle on the same socket.
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self { stream: self.stream.try_clone()?, max_frame: self.max_frame })
    }

    /// A second handle on the same socket for the event loop's reader. Must be called
    /// inside a tokio runtime; it makes the (shared) socket non-blocking.
    #[cfg(feature = "tokio")]
    pub fn async_receiver(&self) -> io::Result<FromHost> {
        let clone = self.stream.try_clone()?;
        clone.set_nonblocking(true)?;
        Ok(FromHost { stream: tokio::net::UnixStream::from_std(clone)?, max_frame: self.max_frame })
    }
}

/// Receives the host's messages inside the worker's event loop.
#[cfg(feature = "tokio")]
pub struct FromHost {
    stream: tokio::net::UnixStream,
    max_frame: u32,
}

#[cfg(feature = "tokio")]
impl FromHost {
    /// Waits for the host's next message.
    pub async fn recv_from_host(&mut self) -> Result<HostToWorker, FrameError> {
        frame::nonblocking::read_frame(&mut self.stream, self.max_frame).await
    }
}

/// `write_all` that waits with poll(2) when a non-blocking socket is full.
fn write_all_waiting(stream: &mut StdUnixStream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match stream.write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_writable(stream)?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn wait_writable(stream: &StdUnixStream) -> io::Result<()> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLOUT)];
    match poll(&mut fds, PollTimeout::NONE) {
        Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
        Err(e) => Err(io::Error::from_raw_os_error(e as i32)),
    }
}

impl AsRawFd for WorkerChannel {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.stream.as_raw_fd()
    }
}

#[cfg(all(test, feature = "tokio"))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::message::*;
    use serde_json::value::RawValue;

    fn pair() -> (OwnedFd, OwnedFd) {
        let (a, b) = StdUnixStream::pair().unwrap();
        (a.into(), b.into())
    }

    #[tokio::test]
    async fn host_and_worker_exchange_typed_messages() {
        let (h, w) = pair();
        let (mut from_worker, mut to_worker) = HostChannel::new(h, 1 << 20).unwrap().split();
        let mut worker = WorkerChannel::new(w, 1 << 20);
        let mut rx = worker.async_receiver().unwrap();

        to_worker
            .send_to_worker(&HostToWorker::ToolAnswer { call_id: 9, answer: ToolAnswer::Resolve(RawValue::from_string("42".into()).unwrap()) })
            .await
            .unwrap();
        match rx.recv_from_host().await.unwrap() {
            HostToWorker::ToolAnswer { call_id: 9, answer: ToolAnswer::Resolve(v) } => assert_eq!(v.get(), "42"),
            other => panic!("{other:?}"),
        }
        worker.send_to_host(&WorkerToHost::Console { level: ConsoleLevel::Warn, text: "hi".into() }).unwrap();
        match from_worker.recv_from_worker().await.unwrap() {
            WorkerToHost::Console { level: ConsoleLevel::Warn, text } => assert_eq!(text, "hi"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn worker_closing_mid_frame_fails_the_host_reader_instead_of_hanging() {
        let (h, w) = pair();
        let (mut from_worker, _to) = HostChannel::new(h, 1 << 20).unwrap().split();
        let mut ws = StdUnixStream::from(w);
        ws.write_all(&[0, 0, 0, 50, b'{']).unwrap();
        drop(ws);
        let err = from_worker.recv_from_worker().await.unwrap_err();
        assert!(matches!(err, FrameError::Truncated { part: "payload", expected: 50, received: 1 }), "{err}");
    }

    #[tokio::test]
    async fn worker_send_waits_for_space_on_a_full_nonblocking_socket() {
        let (h, w) = pair();
        let mut worker = WorkerChannel::new(w, 1 << 20);
        let _rx = worker.async_receiver().unwrap(); // makes the shared socket non-blocking
        let big = "x".repeat(600_000);
        let sender = std::thread::spawn(move || {
            for _ in 0..4 {
                worker.send_to_host(&WorkerToHost::Console { level: ConsoleLevel::Log, text: big.clone() }).unwrap();
            }
        });
        let (mut from_worker, _to) = HostChannel::new(h, 1 << 20).unwrap().split();
        for _ in 0..4 {
            match from_worker.recv_from_worker().await.unwrap() {
                WorkerToHost::Console { text, .. } => assert_eq!(text.len(), 600_000),
                other => panic!("{other:?}"),
            }
        }
        sender.join().unwrap();
    }

    #[test]
    fn worker_blocking_receive_reports_a_closed_host() {
        let (h, w) = pair();
        drop(h);
        let mut worker = WorkerChannel::new(w, 1 << 20);
        assert!(matches!(worker.recv_from_host_blocking(), Err(FrameError::Closed)));
    }
}
