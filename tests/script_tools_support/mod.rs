//! Support of tests/offline/script_tools.rs: the shell lexer, the sources it reads, and its table.

pub mod lexer;
pub mod shell_words;
pub mod sources;
pub mod table;
