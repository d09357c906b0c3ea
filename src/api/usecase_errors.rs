//! The one mapping from each use case's error enum to an HTTP status and code. Messages are the
//! enums' own `Display` text, so a refusal reads the same wherever it is raised. (The changes of
//! who may do what map theirs in `access_errors.rs`.)

use super::ApiError;
use crate::usecases::{
    accounts::SignUpError,
    mfa::MfaError,
    mobile_releases::ReleaseError,
    satellite_live::LiveError,
    satellite_remote::{LogsError, UpdateError},
    satellites::{RegisterError, RenameError},
    service_registry::RegistryError,
    system_status::StatusError,
    system_versions::VersionsError,
    verification::{CommentError, VoteError},
    workers::WorkersError,
};

impl From<SignUpError> for ApiError {
    fn from(e: SignUpError) -> Self {
        let m = e.to_string();
        match e {
            SignUpError::EmailTaken => Self::Conflict("email_taken", m),
            SignUpError::RegistrationClosed => Self::Forbidden("registration_closed", m),
            SignUpError::InviteInvalid => Self::BadRequest("invalid_invite", m),
            SignUpError::InviteUsed => Self::BadRequest("invite_used", m),
            SignUpError::InviteExpired => Self::BadRequest("invite_expired", m),
            SignUpError::InviteEmailMismatch => Self::BadRequest("invite_email_mismatch", m),
            SignUpError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::sign_in::BudgetError> for ApiError {
    fn from(e: crate::usecases::sign_in::BudgetError) -> Self {
        use crate::usecases::sign_in::BudgetError;
        let m = e.to_string();
        match e {
            BudgetError::RateLimited => Self::TooManyRequests(m),
            BudgetError::Locked => Self::Locked(m),
            BudgetError::Store(e) => e.into(),
        }
    }
}

impl From<RegisterError> for ApiError {
    fn from(e: RegisterError) -> Self {
        let m = e.to_string();
        match e {
            RegisterError::InvalidName(_) => Self::Unprocessable("invalid_name", m),
            RegisterError::InvalidDeviceId => Self::Unprocessable("invalid_device_id", m),
            RegisterError::InvalidLocation => Self::Unprocessable("invalid_location", m),
            RegisterError::PolicyAdminsOnly => Self::Forbidden("DEVICE_POLICY_ADMINS", m),
            RegisterError::NameTaken => Self::Conflict("name_taken", m),
            RegisterError::DeviceOfAnotherMember => Self::Forbidden("device_registered_by_another", m),
            RegisterError::BrokerUnavailable(e) => {
                tracing::error!(error = %e, "a satellite's new MQTT login did not reach the broker");
                Self::Unavailable("broker_unavailable", m)
            }
            RegisterError::Store(e) => e.into(),
        }
    }
}

impl From<RenameError> for ApiError {
    fn from(e: RenameError) -> Self {
        let m = e.to_string();
        match e {
            RenameError::InvalidName(_) => Self::Unprocessable("invalid_name", m),
            RenameError::NameTaken => Self::Conflict("name_taken", m),
            RenameError::NotFound => Self::NotFound("satellite_not_found", m),
            RenameError::Store(e) => e.into(),
        }
    }
}

impl From<VoteError> for ApiError {
    fn from(e: VoteError) -> Self {
        let m = e.to_string();
        match e {
            VoteError::DetectionNotFound => Self::NotFound("detection_not_found", m),
            VoteError::Store(e) => e.into(),
        }
    }
}

impl From<CommentError> for ApiError {
    fn from(e: CommentError) -> Self {
        let m = e.to_string();
        match e {
            CommentError::NotFound => Self::NotFound("comment_not_found", m),
            CommentError::NotYours => Self::Forbidden("not_your_comment", m),
            CommentError::Store(e) => e.into(),
        }
    }
}

impl From<MfaError> for ApiError {
    fn from(e: MfaError) -> Self {
        let m = e.to_string();
        match e {
            MfaError::AlreadyEnabled => Self::Conflict("mfa_already_enabled", m),
            MfaError::NotEnabled => Self::Conflict("mfa_not_enabled", m),
            MfaError::NoPendingEnrolment => Self::BadRequest("no_pending_enrolment", m),
            MfaError::BadCode(crate::domain::mfa::CodeError::NotSixDigits) => {
                Self::Unprocessable("invalid_code_format", m)
            }
            MfaError::BadCode(crate::domain::mfa::CodeError::NotABackupCode) => {
                Self::Unprocessable("invalid_backup_code_format", m)
            }
            MfaError::InvalidCode => Self::Unauthorized("invalid_mfa_code", m),
            MfaError::Replayed => Self::Unauthorized("mfa_code_reused", m),
            MfaError::BackupCodeUsed => Self::Unauthorized("backup_code_used", m),
            MfaError::WrongPassword => Self::BadRequest("wrong_password", m),
            MfaError::PlatformAdminMustKeepMfa => Self::Forbidden("platform_admin_mfa_required", m),
            MfaError::NoPasskeys => Self::BadRequest("no_passkeys", m),
            MfaError::NoPendingPasskey => Self::BadRequest("no_pending_passkey_challenge", m),
            MfaError::InvalidPasskey(_) => Self::Unauthorized("invalid_passkey", m),
            MfaError::PasskeysUnavailable(_) => Self::BadRequest("passkeys_unavailable", m),
            MfaError::PasskeyNotFound => Self::NotFound("passkey_not_found", m),
            MfaError::DeviceNotFound => Self::NotFound("device_not_found", m),
            MfaError::UserNotFound => Self::NotFound("user_not_found", m),
            MfaError::KeyMismatch => Self::Unavailable("mfa_key_mismatch", m),
            MfaError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::alert_rules::RuleError> for ApiError {
    fn from(e: crate::usecases::alert_rules::RuleError) -> Self {
        use crate::usecases::alert_rules::RuleError;
        let m = e.to_string();
        match e {
            RuleError::Invalid(_) => Self::Unprocessable("invalid_rule", m),
            RuleError::UnknownChannel(_) => Self::Unprocessable("unknown_channel", m),
            RuleError::UnknownSatellite(_) => Self::Unprocessable("unknown_satellite", m),
            RuleError::UnknownSpecies(_) => Self::Unprocessable("unknown_species", m),
            RuleError::SystemRule => Self::Conflict("system_rule", m),
            RuleError::NotFound => Self::NotFound("rule_not_found", m),
            RuleError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::alert_channels::ChannelError> for ApiError {
    fn from(e: crate::usecases::alert_channels::ChannelError) -> Self {
        use crate::usecases::alert_channels::ChannelError;
        let m = e.to_string();
        match e {
            ChannelError::Invalid(_) => Self::Unprocessable("invalid_channel", m),
            ChannelError::UnknownType(_) => Self::Unprocessable("unknown_channel_type", m),
            ChannelError::Template(_) => Self::Unprocessable("invalid_template", m),
            ChannelError::TypeChange => Self::Conflict("channel_type_immutable", m),
            ChannelError::NotFound => Self::NotFound("channel_not_found", m),
            ChannelError::Secrets(_) => Self::Unavailable("secrets_unreadable", m),
            ChannelError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::scheduled_exports::ScheduleError> for ApiError {
    fn from(e: crate::usecases::scheduled_exports::ScheduleError) -> Self {
        use crate::usecases::scheduled_exports::ScheduleError;
        let m = e.to_string();
        match e {
            ScheduleError::Invalid(_) => Self::Unprocessable("invalid_scheduled_export", m),
            ScheduleError::UnknownFormat(_) => Self::Unprocessable("unknown_format", m),
            ScheduleError::InvalidCron(_) => Self::Unprocessable("invalid_cron", m),
            ScheduleError::InvalidTimezone(_) => Self::Unprocessable("invalid_timezone", m),
            ScheduleError::InvalidFilters(_) => Self::Unprocessable("invalid_filters", m),
            ScheduleError::UnknownChannel(_) => Self::Unprocessable("unknown_channel", m),
            ScheduleError::ChannelType(_) => Self::Unprocessable("unsupported_channel_type", m),
            ScheduleError::NotFound => Self::NotFound("scheduled_export_not_found", m),
            ScheduleError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::species::SpeciesError> for ApiError {
    fn from(e: crate::usecases::species::SpeciesError) -> Self {
        use crate::usecases::species::SpeciesError;
        let m = e.to_string();
        match e {
            SpeciesError::UnknownLanguage(_) => Self::Unprocessable("unknown_language", m),
            SpeciesError::UnknownSpecies(_) => Self::NotFound("species_not_found", m),
            SpeciesError::BadBulk => Self::Unprocessable("invalid_names", m),
            SpeciesError::NoModel => Self::Unavailable("model_unavailable", m),
        }
    }
}

impl From<crate::usecases::expected_species::ExpectedError> for ApiError {
    fn from(e: crate::usecases::expected_species::ExpectedError) -> Self {
        use crate::usecases::expected_species::ExpectedError;
        let m = e.to_string();
        match e {
            ExpectedError::Invalid(_) => Self::Unprocessable("invalid_query", m),
            ExpectedError::Model(_) => Self::Unavailable("model_unavailable", m),
            ExpectedError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::stats::StatsError> for ApiError {
    fn from(e: crate::usecases::stats::StatsError) -> Self {
        use crate::usecases::stats::StatsError;
        let m = e.to_string();
        match e {
            StatsError::InvalidRange(_) => Self::Unprocessable("invalid_range", m),
            StatsError::InvalidConfidence(_) => Self::Unprocessable("invalid_min_confidence", m),
            StatsError::Invalid(_) => Self::Unprocessable("invalid_query", m),
            StatsError::SatelliteNotFound(_) => Self::NotFound("satellite_not_found", m),
            StatsError::SpeciesNotFound(_) => Self::NotFound("species_not_found", m),
            StatsError::UnknownLanguage(_) => Self::Unprocessable("unknown_language", m),
            StatsError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::species_images::ImageError> for ApiError {
    fn from(e: crate::usecases::species_images::ImageError) -> Self {
        use crate::usecases::species_images::ImageError;
        let m = e.to_string();
        match e {
            ImageError::BadCount(_) => Self::Unprocessable("invalid_codes", m),
            ImageError::UnknownSpecies(_) => Self::Unprocessable("unknown_species", m),
            ImageError::NotCached(_) => Self::NotFound("image_not_cached", m),
            ImageError::NoModel => Self::Unavailable("model_unavailable", m),
            ImageError::Store(e) => e.into(),
            ImageError::Objects(e) => Self::Internal(e.into()),
            ImageError::Task(_) => Self::Internal(anyhow::anyhow!(m)),
        }
    }
}

impl From<crate::usecases::weather::WeatherError> for ApiError {
    fn from(e: crate::usecases::weather::WeatherError) -> Self {
        use crate::usecases::weather::WeatherError;
        let m = e.to_string();
        match e {
            WeatherError::SatelliteNotFound => Self::NotFound("satellite_not_found", m),
            WeatherError::Conflicting(_) => Self::BadRequest("invalid_query", m),
            WeatherError::InvalidRange(_) => Self::Unprocessable("invalid_range", m),
            WeatherError::InvalidConfidence(_) => Self::Unprocessable("invalid_min_confidence", m),
            WeatherError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::exports::ExportError> for ApiError {
    fn from(e: crate::usecases::exports::ExportError) -> Self {
        use crate::usecases::exports::ExportError as E;
        let m = e.to_string();
        match e {
            E::InvalidRange(_) => Self::Unprocessable("invalid_range", m),
            E::InvalidFilter(_) => Self::Unprocessable("invalid_filter", m),
            E::SatelliteNotFound(_) => Self::NotFound("satellite_not_found", m),
            E::UnknownLanguage(_) => Self::Unprocessable("unknown_language", m),
            E::ChecklistTooLarge(_) => Self::Unprocessable("checklist_too_large", m),
            E::ObservationRejected(_) => Self::Unprocessable("observation_rows_invalid", m),
            E::TooLarge(_) => Self::Unprocessable("export_too_large", m),
            E::Encode(_) => Self::Internal(anyhow::anyhow!(m)),
            E::Store(e) => e.into(),
        }
    }
}

impl From<ReleaseError> for ApiError {
    fn from(e: ReleaseError) -> Self {
        let m = e.to_string();
        match e {
            ReleaseError::MissingApk => Self::Unprocessable("apk_missing", m),
            ReleaseError::MissingVersion => Self::Unprocessable("version_missing", m),
            ReleaseError::InvalidVersion(_) => Self::Unprocessable("invalid_version", m),
            ReleaseError::InvalidForceUpdate(_) => Self::Unprocessable("invalid_force_update", m),
            ReleaseError::NotesTooLong { .. } => Self::Unprocessable("notes_too_long", m),
            ReleaseError::NotAnApk(_) => Self::Unprocessable("not_an_apk", m),
            ReleaseError::TooLarge { .. } => Self::PayloadTooLarge(m),
            ReleaseError::VersionTaken(_) => Self::Conflict("version_taken", m),
            ReleaseError::NotFound => Self::NotFound("release_not_found", m),
            ReleaseError::InvalidCurrentVersion(_) => Self::Unprocessable("invalid_current_version", m),
            ReleaseError::Objects(e) => e.into(),
            ReleaseError::Store(e) => e.into(),
        }
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::Store(e) => e.into(),
            other => Self::Internal(other.into()),
        }
    }
}

impl From<StatusError> for ApiError {
    fn from(e: StatusError) -> Self {
        let m = e.to_string();
        match e {
            StatusError::Database(e) => {
                tracing::error!(error = %e, "system status: the database did not answer");
                Self::Unavailable("database_unavailable", m)
            }
            StatusError::Registry(e) => e.into(),
        }
    }
}

impl From<WorkersError> for ApiError {
    fn from(e: WorkersError) -> Self {
        match e {
            WorkersError::Registry(e) => e.into(),
            WorkersError::Store(e) => e.into(),
        }
    }
}

impl From<VersionsError> for ApiError {
    fn from(e: VersionsError) -> Self {
        match e {
            VersionsError::Store(e) => e.into(),
        }
    }
}

impl From<UpdateError> for ApiError {
    fn from(e: UpdateError) -> Self {
        let m = e.to_string();
        match e {
            UpdateError::InvalidVersion(_) => Self::Unprocessable("invalid_target_version", m),
            UpdateError::NoTargetVersion => Self::Unprocessable("no_target_version", m),
            UpdateError::AlreadyUpToDate { .. } => Self::Conflict("already_up_to_date", m),
            UpdateError::NotFound => Self::NotFound("satellite_not_found", m),
            UpdateError::Publish(_) => Self::Unavailable("mqtt_unavailable", m),
            UpdateError::Store(e) => e.into(),
        }
    }
}

impl From<LogsError> for ApiError {
    fn from(e: LogsError) -> Self {
        let m = e.to_string();
        match e {
            LogsError::InvalidTail => Self::Unprocessable("invalid_tail", m),
            LogsError::Publish(_) => Self::Unavailable("mqtt_unavailable", m),
        }
    }
}

impl From<LiveError> for ApiError {
    fn from(e: LiveError) -> Self {
        let m = e.to_string();
        match e {
            LiveError::SatelliteNotFound => Self::NotFound("satellite_not_found", m),
            LiveError::NoSession => Self::NotFound("live_session_not_found", m),
            LiveError::NotWatching => Self::Conflict("not_watching", m),
            LiveError::Publish(_) => Self::Unavailable("mqtt_unavailable", m),
            LiveError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::share_links::ShareLinkError> for ApiError {
    fn from(e: crate::usecases::share_links::ShareLinkError) -> Self {
        use crate::usecases::share_links::ShareLinkError;
        let m = e.to_string();
        match e {
            ShareLinkError::DetectionNotFound => Self::NotFound("detection_not_found", m),
            ShareLinkError::LinkNotFound => Self::NotFound("share_not_found", m),
            ShareLinkError::NotYours => Self::Forbidden("not_your_share_link", m),
            ShareLinkError::TooMany => Self::Conflict("too_many_share_links", m),
            ShareLinkError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::public_page::PublicError> for ApiError {
    fn from(e: crate::usecases::public_page::PublicError) -> Self {
        use crate::usecases::public_page::PublicError;
        let m = e.to_string();
        match e {
            PublicError::NotFound => Self::NotFound("public_page_not_found", m),
            PublicError::SpeciesNotFound(_) => Self::NotFound("species_not_found", m),
            PublicError::AudioNotShared => Self::Forbidden("audio_not_shared", m),
            PublicError::DetectionNotFound(_) => Self::NotFound("detection_not_found", m),
            PublicError::NoImage(_) => Self::NotFound("image_not_cached", m),
            PublicError::RateLimited => Self::TooManyRequests(m),
            PublicError::Store(e) => e.into(),
            PublicError::Stats(m) => Self::Unprocessable("invalid_query", m),
        }
    }
}

impl From<crate::usecases::species_threshold::RaiseError> for ApiError {
    fn from(e: crate::usecases::species_threshold::RaiseError) -> Self {
        use crate::usecases::species_threshold::RaiseError;
        let m = e.to_string();
        match e {
            RaiseError::NotARaise { .. } => Self::Conflict("not_a_raise", m),
            RaiseError::OutOfRange(_) => Self::Unprocessable("invalid_threshold", m),
            RaiseError::UnknownSpecies(_) => Self::Unprocessable("unknown_species", m),
            RaiseError::Names(e) => e.into(),
            RaiseError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::learned_thresholds::QualityError> for ApiError {
    fn from(e: crate::usecases::learned_thresholds::QualityError) -> Self {
        use crate::usecases::learned_thresholds::QualityError;
        let m = e.to_string();
        match e {
            QualityError::SpeciesNotFound(_) => Self::NotFound("species_not_found", m),
            QualityError::NoSuggestion => Self::Conflict("no_suggestion", m),
            QualityError::UnknownLanguage(_) => Self::Unprocessable("unknown_language", m),
            QualityError::InvalidSettings(_) => Self::Unprocessable("invalid_settings", m),
            QualityError::Store(e) => e.into(),
        }
    }
}

impl From<crate::usecases::imports::ImportError> for ApiError {
    fn from(e: crate::usecases::imports::ImportError) -> Self {
        use crate::usecases::imports::{ImportError, SourceError};
        let m = e.to_string();
        match e {
            ImportError::Source(SourceError::NotFound { .. }) => Self::Unprocessable("source_not_found", m),
            ImportError::Source(SourceError::UnknownSchema { .. }) => Self::Unprocessable("unknown_schema", m),
            ImportError::Source(SourceError::WrongKind { .. }) => Self::Unprocessable("wrong_kind", m),
            ImportError::Source(SourceError::Unreadable { .. } | SourceError::Sqlite(_)) => {
                Self::Unprocessable("source_unreadable", m)
            }
            ImportError::Source(SourceError::Io(e)) => Self::internal(e),
            ImportError::UnknownSatellite(_) => Self::NotFound("satellite_not_found", m),
            ImportError::BadZone(_) => Self::Unprocessable("invalid_time_zone", m),
            ImportError::InvalidName(_) => Self::Unprocessable("invalid_name", m),
            ImportError::AlreadyRunning(_) => Self::Conflict("import_running", m),
            ImportError::NotFound(_) => Self::NotFound("import_not_found", m),
            ImportError::NoSpace { .. } | ImportError::NoFiles { .. } => Self::Unavailable("insufficient_storage", m),
            ImportError::Archive(_) => Self::Unprocessable("archive_refused", m),
            ImportError::NoLabels => Self::Unavailable("model_missing", m),
            ImportError::Store(e) => e.into(),
            ImportError::Objects(e) => e.into(),
            ImportError::Failed(m) => Self::internal(anyhow::anyhow!(m)),
        }
    }
}

impl From<crate::usecases::import_uploads::UploadError> for ApiError {
    fn from(e: crate::usecases::import_uploads::UploadError) -> Self {
        use crate::usecases::import_uploads::UploadError;
        let m = e.to_string();
        match e {
            UploadError::TooLarge { .. } => Self::PayloadTooLarge(m),
            UploadError::NoSpace { .. } => Self::Unavailable("insufficient_storage", m),
            UploadError::Busy => Self::Conflict("import_running", m),
            UploadError::HubBusy { .. } => Self::Unavailable("imports_busy", m),
            UploadError::Invalid(_) => Self::Unprocessable("invalid_import", m),
            UploadError::WrongFile(w) => {
                use crate::usecases::import_refusals::WrongFile;
                let code = match w {
                    WrongFile::NoDatabase(_) => "source_not_found",
                    WrongFile::NotADatabase(_) => "unknown_schema",
                    WrongFile::OtherPeer { .. } => "wrong_kind",
                    WrongFile::Unreadable(_) => "source_unreadable",
                };
                Self::Unprocessable(code, m)
            }
            UploadError::Import(e) => e.into(),
            UploadError::Io(e) => Self::internal(e),
            UploadError::Store(e) => e.into(),
        }
    }
}
