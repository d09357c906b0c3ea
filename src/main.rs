//! The `birdhub` binary: parse the command line and hand over to [`birdhub::cli`].

use clap::Parser;

fn main() -> std::process::ExitCode {
    birdhub::process_memory::tune();
    birdhub::cli::main(birdhub::cli::Cli::parse())
}
