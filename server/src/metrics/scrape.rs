//! Gauges read when `/metrics` is scraped: each is one cheap read, so nothing runs between
//! scrapes to keep them current.

use ::metrics::gauge;
use sqlx::PgPool;

/// Sets the pool's, the audit chain's and the process's gauges. A read that fails leaves
/// its gauge at its last value (and says so in the log at debug level).
pub(super) async fn read_gauges(pool: &PgPool) {
    gauge!("strad_db_pool_size").set(pool.size());
    gauge!("strad_db_pool_idle").set(pool.num_idle() as f64);
    gauge!("strad_db_pool_max").set(pool.options().get_max_connections());
    match last_audit_id(pool).await {
        Ok(id) => gauge!("strad_audit_last_row_id").set(id as f64),
        Err(error) => {
            tracing::debug!(error.message = %error, "could not read the audit chain's end")
        }
    }
    match std::fs::read_to_string("/proc/self/status") {
        Ok(status) => {
            let memory = Memory::from_status(&status);
            if let Some(bytes) = memory.resident {
                gauge!("strad_process_resident_memory_bytes").set(bytes as f64);
            }
            if let Some(bytes) = memory.virtual_size {
                gauge!("strad_process_virtual_memory_bytes").set(bytes as f64);
            }
        }
        Err(error) => tracing::debug!(error.message = %error, "could not read /proc/self/status"),
    }
}

/// The newest audit row's id: the primary key's last entry, one index probe.
async fn last_audit_id(pool: &PgPool) -> Result<i64, sqlx::Error> {
    let id = sqlx::query_scalar!(r#"SELECT max(id) AS "id" FROM audit_log"#)
        .fetch_one(pool)
        .await?;
    Ok(id.unwrap_or(0))
}

/// The process's memory, in bytes, as Linux reports it in `/proc/self/status` (in kB, so no
/// page size is needed, unlike `statm`).
#[derive(Debug, Default, PartialEq, Eq)]
struct Memory {
    resident: Option<u64>,
    virtual_size: Option<u64>,
}

impl Memory {
    fn from_status(status: &str) -> Self {
        let mut memory = Memory::default();
        for line in status.lines() {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let bytes = || {
                let kilobytes = value
                    .trim()
                    .strip_suffix("kB")?
                    .trim()
                    .parse::<u64>()
                    .ok()?;
                kilobytes.checked_mul(1024)
            };
            match name {
                "VmRSS" => memory.resident = bytes(),
                "VmSize" => memory.virtual_size = bytes(),
                _ => {}
            }
        }
        memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_read_from_the_status_lines_in_bytes() {
        let status = "Name:\tstrad\nVmPeak:\t  999 kB\nVmSize:\t  2048 kB\nVmRSS:\t   512 kB\n";
        assert_eq!(
            Memory::from_status(status),
            Memory {
                resident: Some(512 * 1024),
                virtual_size: Some(2048 * 1024),
            }
        );
        assert_eq!(Memory::from_status("VmRSS: lots\n"), Memory::default());
    }

    #[test]
    fn this_process_reports_its_memory() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let memory = Memory::from_status(&status);
        assert!(memory.resident.is_some_and(|bytes| bytes > 0));
        assert!(memory.virtual_size >= memory.resident);
    }
}
