//! The database tests embed `../migrations` (`#[sqlx::test(migrations = …)]`) when this crate
//! compiles; cargo does not watch that directory by itself, so a migration added or changed
//! would leave test builds running the old set.

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
