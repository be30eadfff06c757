pub mod authorize;
pub mod entitle;
pub mod grants;
pub mod marks;
pub mod policies;
