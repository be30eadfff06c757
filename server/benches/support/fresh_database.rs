//! A database of the benchmark's own, as `#[sqlx::test]` gives each test: created empty on
//! the server `DATABASE_URL` names (strad migrates it as it starts), dropped at the end.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

pub struct FreshDatabase {
    /// The benchmark's own pool on the database, for set-up and its own queries.
    pub pool: PgPool,
    name: String,
    server: PgConnectOptions,
}

impl FreshDatabase {
    /// A new, empty database named after `purpose` and a random suffix.
    pub async fn create(purpose: &str) -> FreshDatabase {
        let url = std::env::var("DATABASE_URL")
            .expect("DATABASE_URL names the PostgreSQL server to benchmark on");
        let server: PgConnectOptions = url.parse().expect("DATABASE_URL is a PostgreSQL URL");
        let name = format!("strad_bench_{purpose}_{}", uuid::Uuid::new_v4().simple());
        let mut connection = PgConnection::connect_with(&server)
            .await
            .expect("PostgreSQL at DATABASE_URL answers");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut connection)
            .await
            .expect("the benchmark's database is created");
        let _ = connection.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(5)
            .connect_with(server.clone().database(&name))
            .await
            .expect("the benchmark connects to its database");
        FreshDatabase { pool, name, server }
    }

    /// Drops the database, ending whatever connections to it remain.
    pub async fn drop(self) {
        self.pool.close().await;
        let mut connection = PgConnection::connect_with(&self.server)
            .await
            .expect("PostgreSQL at DATABASE_URL answers");
        sqlx::query(&format!("DROP DATABASE {} WITH (FORCE)", self.name))
            .execute(&mut connection)
            .await
            .expect("the benchmark's database is dropped");
        let _ = connection.close().await;
    }
}
