//! The listener of `CHANNEL`: what it hears is forgotten, and nothing is remembered while
//! it does not hear.

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;

use super::{CHANNEL, Memos};

/// Listens for announcements until the pool closes, reconnecting when the connection is
/// lost. Entries are used only while it listens.
pub fn spawn_listener(pool: PgPool, memos: Arc<Memos>) {
    tokio::spawn(async move {
        let closed = pool.close_event();
        tokio::pin!(closed);
        loop {
            let listening = async {
                let mut listener = PgListener::connect_with(&pool).await?;
                listener.listen(CHANNEL).await?;
                memos.set_live(true);
                loop {
                    match listener.try_recv().await? {
                        Some(notification) => memos.heard(notification.payload()),
                        // The connection was lost: what was announced meanwhile is lost too.
                        None => return Ok::<(), sqlx::Error>(()),
                    }
                }
            };
            tokio::select! {
                () = &mut closed => return,
                ended = listening => {
                    memos.set_live(false);
                    if let Err(error) = ended {
                        tracing::warn!(error.message = %error, "not hearing changes to authority; reading it from the database until heard again");
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
