//! The behaviour suite of `behaviours.rs`, once per backend: `memory://`, `file://` (a temporary
//! directory) and, with the `s3` feature, `s3://` (the server of `scripts/s3-server.sh`; skipped with a
//! message when it is not configured, a failure on CI).

macro_rules! suite {
    ($kind:expr; $($behaviour:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $behaviour() {
            if let Some(fixture) = crate::common::Fixture::new($kind) {
                crate::behaviours::$behaviour(fixture).await;
            }
        }
    )*};
}

macro_rules! every_behaviour {
    ($kind:expr) => {
        suite!($kind;
            saved_content_reads_back_byte_for_byte,
            saving_an_existing_id_fails_and_keeps_the_first_result,
            a_missing_id_is_not_found,
            pages_count_unicode_characters,
            an_offset_at_the_end_reads_empty_and_past_it_fails,
            an_empty_result_reads_as_an_empty_page,
            delete_is_idempotent,
            list_is_newest_first,
            list_filters_by_owner_and_age,
            deleting_a_session_deletes_its_results_only,
            prune_removes_old_results_with_and_without_session,
            data_without_a_record_is_not_found_and_pruned,
            a_second_instance_reads_what_the_first_wrote,
            a_reader_and_a_writer_on_separate_instances_never_see_a_partial_result,
            a_large_multibyte_result_pages_correctly,
            the_backend_refuses_to_overwrite_a_record,
            racing_saves_of_one_id_have_exactly_one_winner,
            a_corrupt_record_is_reported_and_skipped_by_listings,
            a_record_of_an_unknown_version_is_corrupt_and_names_the_version,
            a_record_copied_from_another_result_is_corrupt,
            deleting_a_result_with_a_corrupt_record_removes_all_of_it,
            deleting_a_session_with_a_corrupt_record_deletes_it_too,
            prune_removes_corrupt_records_older_than_the_cutoff,
        );
    };
}

mod memory {
    every_behaviour!(crate::common::Kind::Memory);
}

mod file {
    every_behaviour!(crate::common::Kind::File);
}

#[cfg(feature = "s3")]
mod s3 {
    every_behaviour!(crate::common::Kind::S3);
}
