//! Reading the fallback's event stream (spec/PROTOCOL.md §1.7): bytes in,
//! whole events out, with one bound: an event longer than a frame may be
//! (`MAX_FRAME_LEN` and a little framing) is refused before it is all
//! buffered, as a WebSocket frame over the limit is.

use belay_proto::message::MAX_FRAME_LEN;

/// Room for `event:`, `data:` and the line breaks around one frame.
const FRAMING: usize = 1024;

/// One event of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamEvent {
    /// `open`, with the stream's id.
    Open(String),
    /// A message (its JSON).
    Message(String),
    /// `close`, with the code and reason.
    Close(u16, String),
}

/// What the stream broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamError {
    /// An event longer than a frame may be.
    TooLarge,
    /// Not UTF-8, or an `open` or `close` whose data is not what §1.7 says.
    Malformed(&'static str),
}

/// Bytes of the stream not yet made into events.
#[derive(Debug, Default)]
pub(crate) struct EventReader {
    buffer: Vec<u8>,
}

impl EventReader {
    /// Add `bytes`; every event they complete, in order.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<StreamEvent>, StreamError> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(end) = find_blank_line(&self.buffer[start..]) {
            let block = &self.buffer[start..start + end.0];
            start += end.1;
            if let Some(event) = parse(block)? {
                events.push(event);
            }
        }
        self.buffer.drain(..start);
        if self.buffer.len() > MAX_FRAME_LEN + FRAMING {
            return Err(StreamError::TooLarge);
        }
        Ok(events)
    }
}

/// Where the first blank line ends a block: (the block's length, the
/// length with the blank line).
fn find_blank_line(bytes: &[u8]) -> Option<(usize, usize)> {
    let lf = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|at| (at, at + 2));
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, at + 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn parse(block: &[u8]) -> Result<Option<StreamEvent>, StreamError> {
    let text = std::str::from_utf8(block).map_err(|_| StreamError::Malformed("not UTF-8"))?;
    let mut name = None;
    let mut data: Option<String> = None;
    for line in text.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = Some(value),
            "data" => match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    let Some(data) = data else {
        // A comment, or an event without data: nothing to dispatch.
        return Ok(None);
    };
    Ok(Some(match name {
        None | Some("message") => StreamEvent::Message(data),
        Some("open") => {
            let value: serde_json::Value = serde_json::from_str(&data)
                .map_err(|_| StreamError::Malformed("open is not JSON"))?;
            let stream = value["stream"]
                .as_str()
                .ok_or(StreamError::Malformed("open names no stream"))?;
            StreamEvent::Open(stream.to_owned())
        }
        Some("close") => {
            let value: serde_json::Value = serde_json::from_str(&data)
                .map_err(|_| StreamError::Malformed("close is not JSON"))?;
            let code = value["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .ok_or(StreamError::Malformed("close has no code"))?;
            let reason = value["reason"].as_str().unwrap_or_default().to_owned();
            StreamEvent::Close(code, reason)
        }
        // Unknown event names are skipped, like unknown message types.
        Some(_) => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_come_out_whole_and_in_order() {
        let mut reader = EventReader::default();
        let stream = "event: open\ndata: {\"stream\":\"s1\"}\n\ndata: {\"type\":\"ping\"}\n\n\
                      event: close\ndata: {\"code\":1012,\"reason\":\"server restarting\"}\n\n";
        let mut events = Vec::new();
        for chunk in stream.as_bytes().chunks(7) {
            events.extend(reader.push(chunk).unwrap());
        }
        assert_eq!(
            events,
            [
                StreamEvent::Open("s1".into()),
                StreamEvent::Message("{\"type\":\"ping\"}".into()),
                StreamEvent::Close(1012, "server restarting".into()),
            ]
        );
    }

    #[test]
    fn comments_and_unknown_events_are_skipped() {
        let mut reader = EventReader::default();
        let events = reader
            .push(b": keepalive\n\nevent: hologram\ndata: 1\n\ndata: {}\r\n\r\n")
            .unwrap();
        assert_eq!(events, [StreamEvent::Message("{}".into())]);
    }

    #[test]
    fn an_event_past_the_frame_limit_is_refused_before_it_ends() {
        let mut reader = EventReader::default();
        let big = vec![b'x'; MAX_FRAME_LEN + FRAMING + 1];
        assert_eq!(reader.push(b"data: ").unwrap(), []);
        assert_eq!(reader.push(&big), Err(StreamError::TooLarge));
    }

    #[test]
    fn a_close_without_a_code_is_malformed() {
        let mut reader = EventReader::default();
        assert!(matches!(
            reader.push(b"event: close\ndata: {}\n\n"),
            Err(StreamError::Malformed(_))
        ));
    }
}
