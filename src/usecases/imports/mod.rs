//! Importing an old BirdNET-Pi or BirdNET-Go station as a satellite of a team (issue 38).

pub mod birdnet_go;
pub mod peer;
