//! The message of a caught panic, which the SDK reports to the host.

/// The message of a caught panic: its `&str` or `String` payload, or a note that it had none.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a payload that is not a string".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_message_reads_str_and_string_payloads() {
        let a: Box<dyn std::any::Any + Send> = Box::new("static");
        let b: Box<dyn std::any::Any + Send> = Box::new(String::from("owned"));
        let c: Box<dyn std::any::Any + Send> = Box::new(42_u8);
        assert_eq!(panic_message(&*a), "static");
        assert_eq!(panic_message(&*b), "owned");
        assert_eq!(
            panic_message(&*c),
            "panic with a payload that is not a string"
        );
    }
}
