//! A frame ticket held by another instance (`tickets`): the instance a load reaches asks the
//! issuer for it with a notification on `CHANNEL`, and the issuer answers on the same channel
//! once it has taken the ticket from its memory, or found it gone. Only the issuer decides,
//! so one load gets the ticket whichever instances its loads reach.
//!
//! Every refusal here is safe — the console opens the app again with a new ticket — so when
//! in doubt the claim is refused: at once when the issuer has not announced itself within
//! `alive` (`instances`: it stopped, and its tickets with it) or this instance is not
//! listening (it could not hear the answer); after `ANSWER_WAIT` when no answer comes. A
//! ticket the issuer gave up whose answer is lost is spent by nobody.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::{oneshot, watch};
use uuid::Uuid;

use super::tickets::Held;

/// The channel claims and answers travel on; every instance listens to it.
pub const CHANNEL: &str = "strad_frame_tickets";
/// How long a load waits for the issuer's answer before it is refused.
pub const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// Asks other instances for their tickets, and answers them for this one's.
#[derive(Clone)]
pub struct Claimer(Arc<Inner>);

struct Inner {
    pool: PgPool,
    instance: Uuid,
    alive: Duration,
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<bool>>>,
    /// Whether the listener is connected (claims made meanwhile could not hear an answer).
    listening: watch::Sender<bool>,
}

impl Inner {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<bool>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Claimer {
    /// Listens on `CHANNEL` for `instance` (whose tickets are `held`) until the pool closes,
    /// reconnecting when the connection is lost.
    pub fn spawn(pool: PgPool, instance: Uuid, held: Arc<Held>, alive: Duration) -> Self {
        let inner = Arc::new(Inner {
            pool,
            instance,
            alive,
            next: AtomicU64::new(0),
            waiting: Mutex::default(),
            listening: watch::Sender::new(false),
        });
        crate::listen::spawn(
            inner.pool.clone(),
            CHANNEL,
            Arc::new(Listening {
                claimer: inner.clone(),
                held,
            }),
            "not hearing other instances; frame tickets they hold are refused until heard again",
        );
        Self(inner)
    }

    pub fn is_listening(&self) -> bool {
        *self.0.listening.borrow()
    }

    /// Waits until the listener is connected, for `at_most`; whether it is.
    pub async fn listening(&self, at_most: Duration) -> bool {
        let mut listening = self.0.listening.subscribe();
        tokio::time::timeout(at_most, listening.wait_for(|on| *on))
            .await
            .is_ok_and(|on| on.is_ok())
    }

    /// Asks `issuer` for the ticket `nonce`: `true` when it gave it to this load.
    pub async fn claim(&self, issuer: Uuid, nonce: [u8; 16]) -> Result<bool, sqlx::Error> {
        let inner = &*self.0;
        if !self.is_listening() {
            return Ok(false);
        }
        let id = inner.next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        inner.waiting().insert(id, answer);
        // However this ends (an answer, a refusal, the load dropped), nothing stays waiting.
        struct Forget<'a>(&'a Inner, u64);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0.waiting().remove(&self.1);
            }
        }
        let _forget = Forget(inner, id);
        let message = Message::Claim {
            issuer,
            claimer: inner.instance,
            id,
            nonce,
        };
        // Sent only if the issuer is alive; a row back says it was.
        let asked = sqlx::query_scalar!(
            r#"SELECT pg_notify($1, $2)::text AS "sent!"
                 FROM instances
                WHERE id = $3 AND seen_at > now() - make_interval(secs => $4)"#,
            CHANNEL,
            message.to_string(),
            issuer,
            inner.alive.as_secs_f64(),
        )
        .fetch_optional(&inner.pool)
        .await?;
        if asked.is_none() {
            tracing::warn!(ticket.issuer = %issuer, "a frame ticket of an instance that is not running; refused");
            return Ok(false);
        }
        match tokio::time::timeout(ANSWER_WAIT, answered).await {
            Ok(Ok(granted)) => Ok(granted),
            _ => {
                tracing::warn!(ticket.issuer = %issuer, "the instance holding a frame ticket did not answer; refused");
                Ok(false)
            }
        }
    }
}

/// What `listen` hears: claims of the tickets `held` here, and answers to `claimer`'s claims.
struct Listening {
    claimer: Arc<Inner>,
    held: Arc<Held>,
}

impl crate::listen::Hearing for Listening {
    fn hearing(&self, on: bool) {
        self.claimer.listening.send_replace(on);
        if !on {
            // Their answers may be lost: refused now rather than at the timeout.
            self.claimer.waiting().clear();
        }
    }

    fn heard(&self, payload: &str) {
        let inner = &self.claimer;
        match payload.parse::<Message>() {
            Ok(Message::Claim {
                issuer,
                claimer,
                id,
                nonce,
            }) if issuer == inner.instance => {
                let granted = self.held.take(&nonce);
                let answer = Message::Answer {
                    claimer,
                    id,
                    granted,
                }
                .to_string();
                let pool = inner.pool.clone();
                tokio::spawn(async move {
                    let sent = sqlx::query!("SELECT pg_notify($1, $2)", CHANNEL, answer)
                        .execute(&pool)
                        .await;
                    if let Err(error) = sent {
                        tracing::warn!(error.message = %error, "could not answer another instance for a frame ticket; nobody spends it");
                    }
                });
            }
            Ok(Message::Answer {
                claimer,
                id,
                granted,
            }) if claimer == inner.instance => {
                if let Some(waiting) = inner.waiting().remove(&id) {
                    let _ = waiting.send(granted);
                }
            }
            Ok(_) => {}
            Err(()) => tracing::warn!("an unreadable notification on {CHANNEL}"),
        }
    }
}

/// What travels on `CHANNEL`, as one line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Message {
    /// `claimer` asks `issuer` for the ticket `nonce`, as its request `id`.
    Claim {
        issuer: Uuid,
        claimer: Uuid,
        id: u64,
        nonce: [u8; 16],
    },
    /// The issuer's answer to `claimer`'s request `id`.
    Answer {
        claimer: Uuid,
        id: u64,
        granted: bool,
    },
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Claim {
                issuer,
                claimer,
                id,
                nonce,
            } => write!(f, "claim {issuer} {claimer} {id} {}", hex::encode(nonce)),
            Message::Answer {
                claimer,
                id,
                granted,
            } => write!(f, "answer {claimer} {id} {}", u8::from(*granted)),
        }
    }
}

impl FromStr for Message {
    type Err = ();

    fn from_str(line: &str) -> Result<Self, ()> {
        let words: Vec<&str> = line.split(' ').collect();
        let uuid = |word: &str| Uuid::parse_str(word).map_err(drop);
        let id = |word: &str| word.parse::<u64>().map_err(drop);
        match words.as_slice() {
            ["claim", issuer, claimer, request, nonce] => Ok(Message::Claim {
                issuer: uuid(issuer)?,
                claimer: uuid(claimer)?,
                id: id(request)?,
                nonce: hex::decode(nonce).map_err(drop)?.try_into().map_err(drop)?,
            }),
            ["answer", claimer, request, granted] => Ok(Message::Answer {
                claimer: uuid(claimer)?,
                id: id(request)?,
                granted: match *granted {
                    "1" => true,
                    "0" => false,
                    _ => return Err(()),
                },
            }),
            _ => Err(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::ssr::approvals::ApprovalSecret;
    use crate::apps::ssr::tickets::{Claims, FrameTickets};

    const DIGEST: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn messages_read_back_as_written_and_nothing_else_reads() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        for message in [
            Message::Claim {
                issuer: a,
                claimer: b,
                id: 7,
                nonce: [9; 16],
            },
            Message::Answer {
                claimer: b,
                id: u64::MAX,
                granted: true,
            },
            Message::Answer {
                claimer: b,
                id: 0,
                granted: false,
            },
        ] {
            assert_eq!(message.to_string().parse::<Message>(), Ok(message));
        }
        for bad in [
            "",
            "claim",
            &format!("claim {a} {b} 7 0909"),
            &format!("claim {a} {b} -1 {}", hex::encode([9; 16])),
            &format!("answer {b} 7 yes"),
            &format!("answer {b} 7 1 extra"),
        ] {
            assert_eq!(bad.parse::<Message>(), Err(()), "{bad}");
        }
    }

    /// An instance of one database: its tickets, announced alive and listening.
    async fn instance(pool: &PgPool) -> Arc<FrameTickets> {
        let id = Uuid::new_v4();
        sqlx::query("INSERT INTO instances (id) VALUES ($1)")
            .bind(id)
            .execute(pool)
            .await
            .unwrap();
        let tickets = Arc::new(FrameTickets::new(
            &ApprovalSecret::new(vec![7; 32]).unwrap(),
            id,
            64,
        ));
        assert!(
            tickets
                .ask_others(pool.clone(), Duration::from_secs(15))
                .await
        );
        tickets
    }

    fn issued(by: &FrameTickets) -> Claims {
        let t = by.issue(Uuid::new_v4(), "clock", "ui://c", DIGEST).unwrap();
        by.verify(&t, "clock").unwrap()
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_ticket_spent_on_another_instance_is_spent_everywhere(pool: PgPool) {
        let (a, b, c) = (
            instance(&pool).await,
            instance(&pool).await,
            instance(&pool).await,
        );
        let claims = issued(&a);
        assert!(b.spend(&claims).await.unwrap(), "a gives it to b");
        assert!(!a.spend(&claims).await.unwrap(), "a gave it away");
        assert!(!b.spend(&claims).await.unwrap());
        assert!(!c.spend(&claims).await.unwrap());
        // And spent on its issuer first, nobody else gets it.
        let claims = issued(&a);
        assert!(a.spend(&claims).await.unwrap());
        assert!(!b.spend(&claims).await.unwrap());
        assert!(!c.spend(&claims).await.unwrap());
    }

    /// Loads of the same tickets on three instances at once: each ticket loads once.
    #[sqlx::test(migrations = "../migrations")]
    async fn loads_on_every_instance_at_once_spend_each_ticket_once(pool: PgPool) {
        let instances = [
            instance(&pool).await,
            instance(&pool).await,
            instance(&pool).await,
        ];
        let claims: Vec<Claims> = (0..30).map(|i| issued(&instances[i % 3])).collect();
        let loads = claims.iter().flat_map(|c| {
            instances.iter().flat_map(move |on| {
                (0..2).map(move |_| {
                    let (on, c) = (on.clone(), c.clone());
                    tokio::spawn(async move { (c.nonce, on.spend(&c).await.unwrap()) })
                })
            })
        });
        let mut firsts: HashMap<[u8; 16], usize> = HashMap::new();
        for load in futures::future::join_all(loads).await {
            let (nonce, first) = load.unwrap();
            *firsts.entry(nonce).or_default() += usize::from(first);
        }
        assert_eq!(firsts.len(), claims.len());
        assert!(firsts.values().all(|&n| n == 1), "{firsts:?}");
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_ticket_of_a_stopped_instance_is_refused_without_waiting(pool: PgPool) {
        let (a, b) = (instance(&pool).await, instance(&pool).await);
        let claims = issued(&a);
        // `a` has not announced itself for a minute: it stopped, with what it held.
        sqlx::query("UPDATE instances SET seen_at = now() - interval '1 minute' WHERE id = $1")
            .bind(claims.issuer)
            .execute(&pool)
            .await
            .unwrap();
        let asked = std::time::Instant::now();
        assert!(!b.spend(&claims).await.unwrap());
        assert!(asked.elapsed() < ANSWER_WAIT, "not waited for");
        // A live instance that never answers (none listens for it) is waited for, then refused.
        let silent = Uuid::new_v4();
        sqlx::query("INSERT INTO instances (id) VALUES ($1)")
            .bind(silent)
            .execute(&pool)
            .await
            .unwrap();
        let unanswered = Claimer::spawn(
            pool.clone(),
            Uuid::new_v4(),
            Arc::default(),
            Duration::from_secs(15),
        );
        assert!(unanswered.listening(Duration::from_secs(10)).await);
        assert!(!unanswered.claim(silent, [3; 16]).await.unwrap());
        assert!(unanswered.0.waiting().is_empty(), "nothing left waiting");
    }

    /// The listener's connection is lost: claims are refused until it listens again, then
    /// work as before.
    #[sqlx::test(migrations = "../migrations")]
    async fn claims_work_again_once_the_listener_is_back(pool: PgPool) {
        let (a, b) = (instance(&pool).await, instance(&pool).await);
        let ended: Vec<bool> = sqlx::query_scalar(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND query ILIKE 'listen%strad_frame_tickets%'",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(ended, [true, true], "one listener each");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let claims = issued(&a);
            if b.spend(&claims).await.unwrap() {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "never heard again");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
