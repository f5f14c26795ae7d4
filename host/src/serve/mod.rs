//! The MCP server: codemode offered to an agent as an MCP tool that runs its programs.
//!
//! This module will hold the rmcp server. Its pure parts are here already:
//! [`declarations`] writes the TypeScript declarations of the catalog's tools that the
//! agent programs against, and [`cut`] shrinks a program's output to the byte cap the
//! agent's context can take.

pub mod cut;
pub mod declarations;
