//! What the per-launch Unix-socket servers of the `ags` process (the egress proxy, the agent
//! hook record, the ssh-agent filter) share: [`Served`], a server on a socket in its own private
//! directory with its stop flag, and [`accept`], the loop that accepts a bounded number of
//! connections until the stop. Each server keeps its connection handler, its limit and what it
//! does with the connections still open at the stop.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};

/// Which step of [`Served::start`] failed.
#[derive(Debug)]
pub enum BindError {
    /// Creating the private directory.
    Dir(io::Error),
    /// Listening on the socket in it.
    Listen(io::Error),
}

/// A running server. Dropping it aborts the server and removes its directory, so no failure
/// path leaves the directory behind (a crashed `ags` leaves it to the sweep of staging
/// directories).
#[derive(Debug)]
pub struct Served {
    task: JoinHandle<()>,
    stop: watch::Sender<bool>,
    dir: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Served {
    /// Create the private directory `dir` (0700; it must not exist), listen on `socket` in it
    /// and run `serve` on its own task, with the stop flag it must end on.
    pub fn start<F>(
        dir: &Path,
        socket: &Path,
        serve: impl FnOnce(UnixListener, watch::Receiver<bool>) -> F,
    ) -> Result<Self, BindError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        crate::fsutil::create_socket_dir(dir).map_err(BindError::Dir)?;
        let listener = UnixListener::bind(socket).map_err(|e| {
            let _ = std::fs::remove_dir_all(dir);
            BindError::Listen(e)
        })?;
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(listener, stopped));
        Ok(Self {
            task,
            stop,
            dir: dir.to_path_buf(),
        })
    }

    /// The private socket directory (recorded for cleanup by the caller).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Set the stop flag, wait for the server to end and remove the socket directory.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        let _ = (&mut self.task).await;
    }
}

/// Wait for the stop flag (or its sender being dropped with the server).
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The connections a server is serving, each holding one of its permits.
pub struct Connections {
    permits: Arc<Semaphore>,
    set: JoinSet<()>,
}

impl Connections {
    /// Serve `conn` if a permit is free (`false`: none is).
    pub fn try_spawn(&mut self, conn: impl Future<Output = ()> + Send + 'static) -> bool {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            return false;
        };
        self.set.spawn(async move {
            conn.await;
            drop(permit);
        });
        true
    }

    /// Wait for every connection to end.
    pub async fn join(&mut self) {
        while self.set.join_next().await.is_some() {}
    }

    /// End every connection now.
    pub async fn abort(mut self) {
        self.set.abort_all();
        self.join().await;
    }
}

/// Accept connections on `listener` and serve each with `conn` until [`stopped`]; returns the
/// connections still open. At most `max` at once (a permit is taken before the accept, more
/// wait to be accepted): the agent cannot use up `ags`'s descriptors, which its other servers
/// and the checks after the launch need.
pub async fn accept<F>(
    listener: &UnixListener,
    max: usize,
    stop: &mut watch::Receiver<bool>,
    mut conn: impl FnMut(UnixStream) -> F,
) -> Connections
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut conns = Connections {
        permits: Arc::new(Semaphore::new(max)),
        set: JoinSet::new(),
    };
    loop {
        let permit = tokio::select! {
            _ = stopped(stop) => break,
            p = conns.permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
        };
        tokio::select! {
            _ = stopped(stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let conn = conn(stream);
                    conns.set.spawn(async move {
                        conn.await;
                        drop(permit);
                    });
                }
                // Out of descriptors, say: try again shortly instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
        }
        while conns.set.try_join_next().is_some() {}
    }
    conns
}
