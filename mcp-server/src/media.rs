//! Images and audio a program returns, handed to the agent as MCP content rather than
//! as base64 inside JSON text (which a model cannot look at and which eats the output
//! cap).
//!
//! Any object in the returned value shaped like an MCP image or audio content item
//! (`{ type: "image" | "audio", data: <base64>, mimeType }`, as a tool's content list
//! holds them, or as the program builds one to mark a value as content) is taken out
//! and attached as content of its own; a placeholder naming it takes its place in the
//! JSON (`"[image 1: image/png, 12.0 KiB, attached]"`). Attachments count against the
//! output cap by their encoded size plus [`ITEM_OVERHEAD`] bytes each (an empty image is
//! not free: the agent still receives its content block): the text keeps at most half
//! of the cap when there are attachments, and an attachment that does not fit in the
//! rest is never cut (a cut base64 string is no image): its placeholder says its size
//! and that it was left out. A returned content list of text and media items comes back
//! item by item, its text items sharing what the attachments leave of the cap.
//!
//! Every step is linear in the size of the value (which the worker already capped at
//! the program's result limit).

use serde_json::Value;

use codemode_core::limits::human_bytes;

/// What kind of media item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// `{ type: "image" }`.
    Image,
    /// `{ type: "audio" }`.
    Audio,
}

/// One image or audio item taken out of a returned value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    /// Image or audio.
    pub kind: MediaKind,
    /// Its MIME type.
    pub mime_type: String,
    /// Its base64 data.
    pub data: String,
}

/// A returned value split into text and attachments.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// The value with each media item replaced by its placeholder.
    pub value: Value,
    /// The media that fit the cap, in the order they appear.
    pub attached: Vec<Media>,
    /// The text items of a returned content list, in order, when the value was one;
    /// `None` for any other value.
    pub content_texts: Option<Vec<String>>,
    /// The placeholders of the media left out (over the cap), in order.
    pub left_out: Vec<String>,
}

/// Marker left where a media item was, until its placeholder is known.
const MARKER: &str = "\u{0}codemode-media:";

/// What one attached item costs of the output cap besides its data and MIME type: the
/// content block around it, as the agent receives it.
pub const ITEM_OVERHEAD: usize = 64;

/// Left-out items whose placeholder says why in full; later ones get a short one.
const EXPLAINED_LEFT_OUT: usize = 8;

/// What `media` costs of the output cap.
fn cost(media: &Media) -> usize {
    media.data.len() + media.mime_type.len() + ITEM_OVERHEAD
}

/// Splits `value` for an output cap of `cap` bytes; `None` when it holds no media
/// (then nothing is copied).
pub fn split(value: &Value, cap: usize) -> Option<Split> {
    if !holds_media(value, 0) {
        return None;
    }
    let mut value = value.clone();
    let mut found = Vec::new();
    take(&mut value, &mut found, 0);
    if found.is_empty() {
        return None;
    }
    let text_size = value.to_string().len();
    let media_budget = cap.saturating_sub(text_size.min(cap / 2));
    let mut used = 0;
    let mut placeholders = Vec::with_capacity(found.len());
    let mut attached = Vec::new();
    let mut left_out = Vec::new();
    let mut left_out_count = 0usize;
    for (i, media) in found.into_iter().enumerate() {
        let kind = match media.kind {
            MediaKind::Image => "image",
            MediaKind::Audio => "audio",
        };
        let size = size_text(media.data.len());
        if used + cost(&media) <= media_budget {
            used += cost(&media);
            placeholders.push(format!("[{kind} {}: {}, {size}, attached]", i + 1, media.mime_type));
            attached.push(media);
        } else {
            left_out_count += 1;
            let placeholder = if left_out_count <= EXPLAINED_LEFT_OUT {
                format!(
                    "[{kind} {}: {}, {size}: left out, more than the {} output cap allows; return fewer or smaller ones]",
                    i + 1,
                    cut_mime(&media.mime_type),
                    human_bytes(cap as u64)
                )
            } else {
                format!("[{kind} {}: left out]", i + 1)
            };
            if left_out_count <= EXPLAINED_LEFT_OUT {
                left_out.push(placeholder.clone());
            }
            placeholders.push(placeholder);
        }
    }
    if left_out_count > EXPLAINED_LEFT_OUT {
        left_out.push(format!(
            "[{} more media items left out: the {} output cap has no room for them]",
            left_out_count - EXPLAINED_LEFT_OUT,
            human_bytes(cap as u64)
        ));
    }
    // Which top-level items are media is known from the markers, before they are placed.
    let content_texts = content_list_texts(&value);
    place(&mut value, &placeholders);
    Some(Split { value, attached, content_texts, left_out })
}

/// A MIME type as a placeholder shows it: at most 100 characters.
fn cut_mime(mime: &str) -> String {
    if mime.chars().count() <= 100 {
        mime.to_string()
    } else {
        format!("{}…", mime.chars().take(100).collect::<String>())
    }
}

/// `n` bytes, as a person reads it: `12 bytes`, `2.9 KiB`, `1.4 MiB`.
fn size_text(n: usize) -> String {
    match n {
        0..1024 => format!("{n} bytes"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

/// Bytes the attachments take of the cap (data, MIME type and [`ITEM_OVERHEAD`] each).
pub fn attached_bytes(split: &Split) -> usize {
    split.attached.iter().map(cost).sum()
}

/// True when `value` holds a media item (looked for as deep as [`take`] looks).
fn holds_media(value: &Value, depth: usize) -> bool {
    depth <= MAX_DEPTH
        && (as_media(value).is_some()
            || match value {
                Value::Array(items) => items.iter().any(|v| holds_media(v, depth + 1)),
                Value::Object(map) => map.values().any(|v| holds_media(v, depth + 1)),
                _ => false,
            })
}

/// How deep in a value media items are looked for.
const MAX_DEPTH: usize = 256;

/// Replaces every media item in `value` by a marker, collecting it.
fn take(value: &mut Value, found: &mut Vec<Media>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(media) = as_media(value) {
        *value = Value::String(format!("{MARKER}{}", found.len()));
        found.push(media);
        return;
    }
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| take(v, found, depth + 1)),
        Value::Object(map) => map.values_mut().for_each(|v| take(v, found, depth + 1)),
        _ => {}
    }
}

/// The media item `value` is, when it is one.
fn as_media(value: &Value) -> Option<Media> {
    let map = value.as_object()?;
    let kind = match map.get("type")?.as_str()? {
        "image" => MediaKind::Image,
        "audio" => MediaKind::Audio,
        _ => return None,
    };
    let data = map.get("data")?.as_str()?;
    let mime_type = map.get("mimeType")?.as_str()?;
    Some(Media { kind, mime_type: mime_type.to_string(), data: data.to_string() })
}

/// Replaces each marker by its placeholder.
fn place(value: &mut Value, placeholders: &[String]) {
    match value {
        Value::String(s) if s.starts_with(MARKER) => {
            if let Some(text) = s[MARKER.len()..].parse::<usize>().ok().and_then(|i| placeholders.get(i)) {
                *s = text.clone();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| place(v, placeholders)),
        Value::Object(map) => map.values_mut().for_each(|v| place(v, placeholders)),
        _ => {}
    }
}

/// When `value` is a content list (every item text or a media item's marker), its text
/// items' texts, in order.
fn content_list_texts(value: &Value) -> Option<Vec<String>> {
    let items = value.as_array()?;
    let mut texts = Vec::new();
    for item in items {
        match item {
            Value::String(s) if s.starts_with(MARKER) => {}
            Value::Object(map)
                if map.get("type").and_then(Value::as_str) == Some("text")
                    && map.get("text").is_some_and(Value::is_string) =>
            {
                texts.push(map.get("text").and_then(Value::as_str).unwrap_or_default().to_string());
            }
            _ => return None,
        }
    }
    Some(texts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn media_items_are_taken_out_wherever_they_are() {
        let value = json!({ "shot": { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }, "title": "Home", "n": 1 });
        let split = split(&value, 64 * 1024).unwrap();
        assert_eq!(split.value, json!({ "shot": "[image 1: image/png, 12 bytes, attached]", "title": "Home", "n": 1 }));
        assert_eq!(attached_bytes(&split), 12 + 9 + ITEM_OVERHEAD);
        assert_eq!(
            split.attached,
            vec![Media { kind: MediaKind::Image, mime_type: "image/png".into(), data: "iVBORw0KGgo=".into() }]
        );
        assert_eq!(split.content_texts, None);
        assert_eq!(super::split(&json!({ "type": "image", "data": 5 }), 100), None, "not a media item");
        assert_eq!(super::split(&json!([1, "x"]), 100), None);
    }

    #[test]
    fn a_content_list_comes_back_item_by_item() {
        let value = json!([{ "type": "text", "text": "a pixel" }, { "type": "audio", "data": "AAAA", "mimeType": "audio/wav" }]);
        let split = split(&value, 1024).unwrap();
        assert_eq!(split.content_texts, Some(vec!["a pixel".to_string()]));
        assert_eq!(split.attached[0].kind, MediaKind::Audio);
    }

    #[test]
    fn media_over_the_cap_is_left_out_whole_with_its_size() {
        let big = "A".repeat(3000);
        let value = json!([{ "type": "image", "data": big, "mimeType": "image/png" }, { "type": "image", "data": "QUJD", "mimeType": "image/gif" }]);
        let split = split(&value, 2048).unwrap();
        assert_eq!(split.attached.len(), 1);
        assert_eq!(split.attached[0].mime_type, "image/gif", "the one that fits is still attached");
        assert_eq!(
            split.value[0],
            "[image 1: image/png, 2.9 KiB: left out, more than the 2 KiB output cap allows; return fewer or smaller ones]"
        );
        assert_eq!(split.value[1], "[image 2: image/gif, 4 bytes, attached]");
        assert_eq!(split.left_out, [split.value[0].as_str().unwrap()]);
        assert_eq!(attached_bytes(&split), 4 + 9 + ITEM_OVERHEAD);
    }

    #[test]
    fn empty_items_are_not_free_and_many_are_summed_up() {
        let value = Value::Array(vec![json!({ "type": "image", "data": "", "mimeType": "a" }); 60_000]);
        let split = split(&value, 64 * 1024).unwrap();
        // Half the cap at most goes to the placeholders' text; the rest holds items of
        // ITEM_OVERHEAD + 1 bytes each.
        assert!(split.attached.len() <= 64 * 1024 / (ITEM_OVERHEAD + 1), "{}", split.attached.len());
        assert!(attached_bytes(&split) <= 64 * 1024);
        assert_eq!(split.content_texts, Some(vec![]));
        assert_eq!(split.left_out.len(), EXPLAINED_LEFT_OUT + 1);
        let more = 60_000 - split.attached.len() - EXPLAINED_LEFT_OUT;
        assert_eq!(
            split.left_out.last().unwrap(),
            &format!("[{more} more media items left out: the 64 KiB output cap has no room for them]")
        );
        assert_eq!(split.value[59_999], "[image 60000: left out]");
    }
}
