//! Role-named ends of the worker channel (a Unix stream socket pair).
//!
//! The host holds a [`FromWorker`] and a [`ToWorker`] and can only receive
//! [`WorkerToHost`] and send [`HostToWorker`]; the worker holds a [`WorkerChannel`]
//! with the mirror image. A message of the
//! wrong direction does not type-check on the sender and fails to decode on the
//! receiver.
//!
//! The async ends register their descriptor for readability only, and writes go out
//! directly (queued if the socket is full): a socket registered for writability too
//! would wake both processes' event loops each time the peer reads, which costs more
//! than the whole tool call on a small VM.

use std::io::{self, Write};
use std::marker::PhantomData;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream as StdUnixStream;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::frame::{self, FrameError, HEADER_BYTES};
use crate::message::{HostToWorker, WorkerToHost};

/// Bytes asked of each read(2): one read usually brings a whole frame, or many.
#[cfg(feature = "tokio")]
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Receives frames of type `T` from a non-blocking socket, inside a tokio runtime.
///
/// `recv` is cancellation-safe: a partly received frame stays buffered.
#[cfg(feature = "tokio")]
pub struct FrameReceiver<T> {
    fd: tokio::io::unix::AsyncFd<OwnedFd>,
    buf: Vec<u8>,
    start: usize,
    max_frame: u32,
    _message: PhantomData<fn() -> T>,
}

#[cfg(feature = "tokio")]
impl<T: DeserializeOwned> FrameReceiver<T> {
    /// Makes `fd` non-blocking and registers it for readability.
    pub fn new(fd: OwnedFd, max_frame: u32) -> io::Result<Self> {
        set_nonblocking(&fd)?;
        // SAFETY: the AsyncFd owns the descriptor; nothing replaces or closes it while
        // it is registered.
        let fd = unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(Self { fd, buf: Vec::with_capacity(READ_CHUNK_BYTES), start: 0, max_frame, _message: PhantomData })
    }

    /// Waits for the next frame.
    pub async fn recv(&mut self) -> Result<T, FrameError> {
        loop {
            if let Some(message) = self.parse_buffered()? {
                return Ok(message);
            }
            let mut guard = self.fd.readable().await?;
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let len = self.buf.len();
            self.buf.resize(len + READ_CHUNK_BYTES, 0);
            let result =
                guard.try_io(|fd| nix::unistd::read(fd.get_ref(), &mut self.buf[len..]).map_err(io::Error::from));
            match result {
                Ok(Ok(0)) => {
                    self.buf.truncate(len);
                    return Err(self.eof_error());
                }
                Ok(Ok(n)) => self.buf.truncate(len + n),
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => self.buf.truncate(len),
                Ok(Err(e)) => {
                    self.buf.truncate(len);
                    return Err(FrameError::Io(e));
                }
                Err(_would_block) => self.buf.truncate(len),
            }
        }
    }

    /// Like [`FrameReceiver::recv`], but first polls the socket without sleeping for up
    /// to `budget`.
    ///
    /// Waking a sleeping thread costs tens of microseconds on small VMs, more than a
    /// whole tool call; when an answer is expected within microseconds, a short busy
    /// poll avoids that cost. A zero budget is a plain `recv`.
    pub async fn recv_busy_poll(&mut self, budget: std::time::Duration) -> Result<T, FrameError> {
        if let Some(message) = self.parse_buffered()? {
            return Ok(message);
        }
        if !budget.is_zero() {
            let until = std::time::Instant::now() + budget;
            loop {
                if self.start > 0 {
                    self.buf.drain(..self.start);
                    self.start = 0;
                }
                let len = self.buf.len();
                self.buf.resize(len + READ_CHUNK_BYTES, 0);
                match nix::unistd::read(self.fd.get_ref(), &mut self.buf[len..]) {
                    Ok(0) => {
                        self.buf.truncate(len);
                        return Err(self.eof_error());
                    }
                    Ok(n) => {
                        self.buf.truncate(len + n);
                        if let Some(message) = self.parse_buffered()? {
                            return Ok(message);
                        }
                    }
                    Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => {
                        self.buf.truncate(len);
                        if std::time::Instant::now() >= until {
                            break;
                        }
                        std::hint::spin_loop();
                    }
                    Err(e) => {
                        self.buf.truncate(len);
                        return Err(FrameError::Io(e.into()));
                    }
                }
            }
        }
        self.recv().await
    }

    /// Decodes the next complete frame in the buffer, if there is one. An oversized
    /// header fails here, before its payload is read.
    fn parse_buffered(&mut self) -> Result<Option<T>, FrameError> {
        let available = &self.buf[self.start..];
        if available.len() < HEADER_BYTES {
            return Ok(None);
        }
        let len = frame::check_len([available[0], available[1], available[2], available[3]], self.max_frame)?;
        if available.len() < HEADER_BYTES + len {
            return Ok(None);
        }
        let message = frame::decode(&available[HEADER_BYTES..HEADER_BYTES + len]);
        self.start += HEADER_BYTES + len;
        if self.start == self.buf.len() {
            // Everything read was used: start over, and give back what a large frame grew.
            self.buf.clear();
            self.start = 0;
            if self.buf.capacity() > 4 * READ_CHUNK_BYTES {
                self.buf = Vec::with_capacity(READ_CHUNK_BYTES);
            }
        }
        message.map(Some)
    }

    fn eof_error(&self) -> FrameError {
        let available = &self.buf[self.start..];
        if available.is_empty() {
            FrameError::Closed
        } else if available.len() < HEADER_BYTES {
            FrameError::Truncated { part: "header", expected: HEADER_BYTES, received: available.len() }
        } else {
            let len = u32::from_be_bytes([available[0], available[1], available[2], available[3]]) as usize;
            FrameError::Truncated { part: "payload", expected: len, received: available.len() - HEADER_BYTES }
        }
    }
}

/// Sends frames of type `T` on a non-blocking socket without ever blocking the thread:
/// what the socket cannot take yet stays queued until [`FrameSender::flush`].
#[cfg(feature = "tokio")]
pub struct FrameSender<T> {
    fd: OwnedFd,
    pending: Vec<u8>,
    _message: PhantomData<fn(T)>,
}

#[cfg(feature = "tokio")]
impl<T: Serialize> FrameSender<T> {
    /// Makes `fd` non-blocking.
    pub fn new(fd: OwnedFd) -> io::Result<Self> {
        set_nonblocking(&fd)?;
        Ok(Self { fd, pending: Vec::new(), _message: PhantomData })
    }

    /// Queues one message and writes as much of the queue as the socket takes now.
    pub fn queue(&mut self, message: &T) -> Result<(), FrameError> {
        let frame = frame::encode(message)?;
        if self.pending.is_empty() {
            let written = write_some(&self.fd, &frame)?;
            self.pending.extend_from_slice(&frame[written..]);
        } else {
            self.pending.extend_from_slice(&frame);
            self.write_pending()?;
        }
        Ok(())
    }

    /// True while queued bytes wait for socket space.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Bytes queued and not yet written.
    pub fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    /// Waits until everything queued is written.
    pub async fn flush(&mut self) -> Result<(), FrameError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // Writability is watched only while something waits for it, on a second
        // descriptor registered for that alone.
        let dup = self.fd.try_clone()?;
        // SAFETY: the AsyncFd owns `dup`; nothing replaces or closes it while registered.
        let watch = unsafe { tokio::io::unix::AsyncFd::register_with_interest(dup, tokio::io::Interest::WRITABLE) }
            .map_err(io::Error::from)?;
        while !self.pending.is_empty() {
            let mut guard = watch.writable().await?;
            self.write_pending()?;
            if !self.pending.is_empty() {
                guard.clear_ready();
            }
        }
        Ok(())
    }

    /// Queues one message and waits until it is written.
    pub async fn send(&mut self, message: &T) -> Result<(), FrameError> {
        self.queue(message)?;
        self.flush().await
    }

    fn write_pending(&mut self) -> Result<(), FrameError> {
        let written = write_some(&self.fd, &self.pending)?;
        self.pending.drain(..written);
        Ok(())
    }
}

/// Writes what the non-blocking socket takes now; returns how much that was.
fn write_some(fd: &OwnedFd, mut buf: &[u8]) -> io::Result<usize> {
    let total = buf.len();
    while !buf.is_empty() {
        match nix::unistd::write(fd, buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(total - buf.len())
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

/// The host's end of one worker's channel.
#[cfg(feature = "tokio")]
pub struct HostChannel;

#[cfg(feature = "tokio")]
impl HostChannel {
    /// Splits the host's end of a socket pair into its receiving and sending halves.
    /// Must be called inside a tokio runtime.
    pub fn open(fd: OwnedFd, max_frame: u32) -> io::Result<(FromWorker, ToWorker)> {
        let write_fd = fd.try_clone()?;
        Ok((FromWorker(FrameReceiver::new(fd, max_frame)?), ToWorker(FrameSender::new(write_fd)?)))
    }
}

/// Receives what a worker sends.
#[cfg(feature = "tokio")]
pub struct FromWorker(FrameReceiver<WorkerToHost>);

#[cfg(feature = "tokio")]
impl FromWorker {
    /// Waits for the worker's next message (cancellation-safe).
    pub async fn recv_from_worker(&mut self) -> Result<WorkerToHost, FrameError> {
        self.0.recv().await
    }

    /// Waits for the worker's next message, busy-polling for up to `budget` first
    /// (see [`FrameReceiver::recv_busy_poll`]).
    pub async fn recv_from_worker_busy_poll(
        &mut self,
        budget: std::time::Duration,
    ) -> Result<WorkerToHost, FrameError> {
        self.0.recv_busy_poll(budget).await
    }
}

/// Sends to a worker.
#[cfg(feature = "tokio")]
pub struct ToWorker(FrameSender<HostToWorker>);

#[cfg(feature = "tokio")]
impl ToWorker {
    /// Queues a message for the worker and writes what the socket takes now.
    pub fn queue_to_worker(&mut self, message: &HostToWorker) -> Result<(), FrameError> {
        self.0.queue(message)
    }

    /// True while queued messages wait for socket space.
    pub fn has_pending(&self) -> bool {
        self.0.has_pending()
    }

    /// Bytes of queued messages the worker has not read yet (not even into its
    /// socket buffer).
    pub fn pending_bytes(&self) -> usize {
        self.0.pending_bytes()
    }

    /// Waits until every queued message is written.
    pub async fn flush_to_worker(&mut self) -> Result<(), FrameError> {
        self.0.flush().await
    }

    /// Sends one message and waits until it is written.
    pub async fn send_to_worker(&mut self, message: &HostToWorker) -> Result<(), FrameError> {
        self.0.send(message).await
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

    /// The channel's descriptor (for a last report from a panic hook).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.stream.as_raw_fd()
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

    /// Blocks until the host's next message, busy-polling for up to `budget` first.
    ///
    /// Waking a sleeping process costs tens of microseconds on small VMs, more than a
    /// whole tool call; when an answer is expected within microseconds, a short busy
    /// poll avoids that cost. A zero budget blocks at once.
    pub fn recv_from_host_busy_poll(&mut self, budget: std::time::Duration) -> Result<HostToWorker, FrameError> {
        if !budget.is_zero() {
            let until = std::time::Instant::now() + budget;
            while !readable_now(&self.stream)? && std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        self.recv_from_host_blocking()
    }
}

/// True when the socket has data (or end of file) to read right now.
fn readable_now(stream: &StdUnixStream) -> io::Result<bool> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(n) => Ok(n > 0),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(io::Error::from_raw_os_error(e as i32)),
    }
}

/// Writes all of `buf` to `fd`, waiting with poll(2) whenever a non-blocking socket is
/// full. Uses only `write(2)` and `poll(2)`: a worker's panic hook reports through it.
pub fn write_all_blocking(fd: BorrowedFd<'_>, mut buf: &[u8]) -> io::Result<()> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    while !buf.is_empty() {
        match nix::unistd::write(fd, buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => {
                let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
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
        let (mut from_worker, mut to_worker) = HostChannel::open(h, 1 << 20).unwrap();
        let mut worker = WorkerChannel::new(w, 1 << 20);

        to_worker
            .send_to_worker(&HostToWorker::ToolAnswer {
                call_id: 9,
                answer: ToolAnswer::Resolve(RawValue::from_string("42".into()).unwrap()),
            })
            .await
            .unwrap();
        match worker.recv_from_host_busy_poll(std::time::Duration::from_micros(50)).unwrap() {
            HostToWorker::ToolAnswer { call_id: 9, answer: ToolAnswer::Resolve(v) } => assert_eq!(v.get(), "42"),
            other => panic!("{other:?}"),
        }
        worker.send_to_host(&WorkerToHost::Console { level: ConsoleLevel::Warn, text: "hi".into() }).unwrap();
        worker
            .send_to_host(&WorkerToHost::Console { level: ConsoleLevel::Log, text: "two frames, one read".into() })
            .unwrap();
        match from_worker.recv_from_worker().await.unwrap() {
            WorkerToHost::Console { level: ConsoleLevel::Warn, text } => assert_eq!(text, "hi"),
            other => panic!("{other:?}"),
        }
        match from_worker.recv_from_worker().await.unwrap() {
            WorkerToHost::Console { text, .. } => assert_eq!(text, "two frames, one read"),
            other => panic!("{other:?}"),
        }
        drop(worker);
        assert!(matches!(from_worker.recv_from_worker().await, Err(FrameError::Closed)));
    }

    #[tokio::test]
    async fn worker_closing_mid_frame_fails_the_host_reader_instead_of_hanging() {
        let (h, w) = pair();
        let (mut from_worker, _to) = HostChannel::open(h, 1 << 20).unwrap();
        let mut ws = StdUnixStream::from(w);
        ws.write_all(&[0, 0, 0, 50, b'{']).unwrap();
        drop(ws);
        let err = from_worker.recv_from_worker().await.unwrap_err();
        assert!(matches!(err, FrameError::Truncated { part: "payload", expected: 50, received: 1 }), "{err}");
        assert!(err.is_disconnect());
    }

    #[tokio::test]
    async fn worker_closing_mid_header_is_truncated_too() {
        let (h, w) = pair();
        let (mut from_worker, _to) = HostChannel::open(h, 1 << 20).unwrap();
        let mut ws = StdUnixStream::from(w);
        ws.write_all(&[0, 0]).unwrap();
        drop(ws);
        assert!(matches!(
            from_worker.recv_from_worker().await,
            Err(FrameError::Truncated { part: "header", expected: 4, received: 2 })
        ));
    }

    #[tokio::test]
    async fn an_oversized_header_fails_before_the_payload_arrives() {
        let (h, w) = pair();
        let (mut from_worker, _to) = HostChannel::open(h, 1024).unwrap();
        let mut ws = StdUnixStream::from(w);
        ws.write_all(&[0, 1, 0, 0]).unwrap();
        // The writer stays open and sends nothing more: the reader must not wait for 64 KiB.
        let err = tokio::time::timeout(std::time::Duration::from_secs(2), from_worker.recv_from_worker())
            .await
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { len: 65536, max: 1024 }), "{err}");
        drop(ws);
    }

    #[tokio::test]
    async fn garbage_is_a_decode_error() {
        let (h, w) = pair();
        let (mut from_worker, _to) = HostChannel::open(h, 1024).unwrap();
        let mut ws = StdUnixStream::from(w);
        ws.write_all(&[0, 0, 0, 3, b'a', b'b', b'c']).unwrap();
        assert!(matches!(from_worker.recv_from_worker().await, Err(FrameError::Decode(_))));
    }

    #[tokio::test]
    async fn host_queues_when_the_worker_does_not_read_and_flushes_later() {
        let (h, w) = pair();
        let (_from, mut to_worker) = HostChannel::open(h, 1 << 20).unwrap();
        let big = "x".repeat(300_000);
        for id in 0..4 {
            // Never blocks, even though nobody reads yet.
            to_worker
                .queue_to_worker(&HostToWorker::ToolAnswer { call_id: id, answer: ToolAnswer::Reject(big.clone()) })
                .unwrap();
        }
        assert!(to_worker.has_pending());
        let reader = std::thread::spawn(move || {
            let mut worker = WorkerChannel::new(w, 1 << 20);
            (0..4)
                .map(|_| match worker.recv_from_host_blocking().unwrap() {
                    HostToWorker::ToolAnswer { call_id, .. } => call_id,
                    HostToWorker::Start(_) | HostToWorker::Prepare { .. } => u64::MAX,
                })
                .collect::<Vec<_>>()
        });
        to_worker.flush_to_worker().await.unwrap();
        assert!(!to_worker.has_pending());
        assert_eq!(reader.join().unwrap(), vec![0, 1, 2, 3]);
    }

    #[tokio::test]
    async fn worker_send_waits_for_space_on_a_full_nonblocking_socket() {
        let (h, w) = pair();
        let mut worker = WorkerChannel::new(w, 1 << 20);
        worker.stream.set_nonblocking(true).unwrap(); // writes must still complete
        let big = "x".repeat(600_000);
        let sender = std::thread::spawn(move || {
            for _ in 0..4 {
                worker.send_to_host(&WorkerToHost::Console { level: ConsoleLevel::Log, text: big.clone() }).unwrap();
            }
        });
        let (mut from_worker, _to) = HostChannel::open(h, 1 << 20).unwrap();
        for _ in 0..4 {
            match from_worker.recv_from_worker().await.unwrap() {
                WorkerToHost::Console { text, .. } => assert_eq!(text.len(), 600_000),
                other => panic!("{other:?}"),
            }
        }
        sender.join().unwrap();
    }

    #[tokio::test]
    async fn busy_polling_receives_what_arrives_during_and_after_the_budget() {
        let (h, w) = pair();
        let (mut from_worker, _to) = HostChannel::open(h, 1 << 20).unwrap();
        let mut worker = WorkerChannel::new(w, 1 << 20);
        let sender = std::thread::spawn(move || {
            worker.send_to_host(&WorkerToHost::Console { level: ConsoleLevel::Log, text: "soon".into() }).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(50));
            worker.send_to_host(&WorkerToHost::Console { level: ConsoleLevel::Log, text: "late".into() }).unwrap();
            worker
        });
        for expected in ["soon", "late"] {
            match from_worker.recv_from_worker_busy_poll(std::time::Duration::from_micros(100)).await.unwrap() {
                WorkerToHost::Console { text, .. } => assert_eq!(text, expected),
                other => panic!("{other:?}"),
            }
        }
        drop(sender.join().unwrap());
        assert!(matches!(
            from_worker.recv_from_worker_busy_poll(std::time::Duration::from_micros(100)).await,
            Err(FrameError::Closed)
        ));
    }

    #[test]
    fn worker_blocking_receive_reports_a_closed_host() {
        let (h, w) = pair();
        drop(h);
        let mut worker = WorkerChannel::new(w, 1 << 20);
        assert!(matches!(worker.recv_from_host_blocking(), Err(FrameError::Closed)));
    }
}
