//! `db::MIGRATOR` embeds `../migrations` when this crate compiles; cargo does not watch that
//! directory by itself, so a migration added or changed would leave a build that skips it.

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
