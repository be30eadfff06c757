pub mod authorize;
pub mod grants;
pub mod marks;
pub mod policies;
