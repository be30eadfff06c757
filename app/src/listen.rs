//! Hearing PostgreSQL notifications on one channel for as long as a pool is open: the loop
//! every listener in strad runs. What is sent while the connection is down is lost with it,
//! so a listener is told when it starts hearing and when it stops, and must not rely on
//! anything it would have heard meanwhile.

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;

/// What a listener does with what it hears.
pub trait Hearing: Send + Sync + 'static {
    /// The connection listens (`true`: everything sent from now on is heard) or was lost.
    fn hearing(&self, on: bool);
    /// One notification's payload.
    fn heard(&self, payload: &str);
}

/// Listens on `channel` for `to` until `pool` closes, connecting again half a second after
/// the connection is lost; `lost` is the warning logged then.
pub fn spawn(pool: PgPool, channel: &'static str, to: Arc<impl Hearing>, lost: &'static str) {
    tokio::spawn(async move {
        let closed = pool.close_event();
        tokio::pin!(closed);
        loop {
            let listening = async {
                let mut listener = PgListener::connect_with(&pool).await?;
                listener.listen(channel).await?;
                to.hearing(true);
                loop {
                    match listener.try_recv().await? {
                        Some(notification) => to.heard(notification.payload()),
                        None => return Ok::<(), sqlx::Error>(()),
                    }
                }
            };
            tokio::select! {
                () = &mut closed => return,
                ended = listening => {
                    to.hearing(false);
                    match ended {
                        Err(error) => tracing::warn!(error.message = %error, "{lost}"),
                        Ok(()) => tracing::warn!("{lost}"),
                    }
                }
            }
            tokio::select! {
                () = &mut closed => return,
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    });
}
