//! `birdhub model fetch` and `birdhub model status`.

use std::{path::PathBuf, process::ExitCode};

use crate::{
    config::Settings,
    inference::{ModelDir, Precision, labels},
};

/// Runs `models/fetch.sh` from the checkout this binary was built from (or `./models`).
pub fn fetch(args: &[String]) -> anyhow::Result<ExitCode> {
    let candidates =
        [PathBuf::from("models/fetch.sh"), PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/fetch.sh")];
    let Some(script) = candidates.iter().find(|p| p.is_file()) else {
        if std::path::Path::new(crate::inference::SYSTEM_MODEL_DIR).is_dir() {
            anyhow::bail!(
                "the package already carries the model in {}; models/fetch.sh is for source checkouts",
                crate::inference::SYSTEM_MODEL_DIR
            );
        }
        anyhow::bail!("models/fetch.sh not found; run this from the birdhub checkout");
    };
    let status = std::process::Command::new("bash").arg(script).args(args).status()?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

pub fn status(settings: &Settings) -> anyhow::Result<ExitCode> {
    let dir = match ModelDir::locate(&settings.inference.model_dir) {
        Ok(d) => d,
        Err(e) => {
            println!("model: missing\n{e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    match dir.check() {
        Ok(()) => {
            println!("model: ready at {}", dir.path.display());
            println!("runtime: {}", dir.runtime_library().display());
            println!("languages: {}", labels::languages(&dir.path).join(" "));
            let shipped: Vec<&str> =
                Precision::ALL.iter().filter(|p| dir.file(p.file_name()).is_file()).map(|p| p.as_str()).collect();
            let wanted = settings.inference.precision;
            let note = if shipped.contains(&wanted.as_str()) { "" } else { " (not in the directory: fp32 runs)" };
            println!("precision: {wanted}{note}; shipped: {}", shipped.join(" "));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("model: incomplete at {}\n{e}", dir.path.display());
            Ok(ExitCode::FAILURE)
        }
    }
}
