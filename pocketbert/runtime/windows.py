"""Long texts for NER: overlapping windows and the merge of their entities.

A text longer than the model's maximum is cut into windows of ``content = max_length - specials``
tokens, each starting ``content - stride`` tokens after the previous one, until one reaches the end
(the rule of ``tokenizers``' overflow, which Hugging Face's token-classification pipeline uses with
``stride=``).  Each window is decoded on its own with offsets into the whole text, then overlapping
entities are merged the way Hugging Face merges them: the longer span wins, a tie goes to the higher
score.  This module holds the arithmetic and the merge; the tokenizer does the cutting.
"""

from __future__ import annotations


def default_stride(max_length: int) -> int:
    """A quarter of the window overlaps its neighbour: entities cut by one window are whole in the next."""
    return max(0, max_length // 4)


def window_starts(num_tokens: int, content: int, stride: int) -> list[int]:
    """Index (into the text's tokens, specials excluded) of each window's first token."""
    if num_tokens <= content:
        return [0]
    step = content - stride
    starts = []
    for start in range(0, num_tokens, step):
        starts.append(start)
        if start + content >= num_tokens:
            break
    return starts


def merge_overlapping(entities: list[dict]) -> list[dict]:
    """Entities of all windows of one text -> one list, sorted by start, without overlaps."""
    if not entities:
        return entities
    entities = sorted(entities, key=lambda e: e["start"])
    merged = []
    previous = entities[0]
    for entity in entities:
        if previous["start"] <= entity["start"] < previous["end"]:
            length, previous_length = entity["end"] - entity["start"], previous["end"] - previous["start"]
            if length > previous_length or length == previous_length and entity["score"] > previous["score"]:
                previous = entity
        else:
            merged.append(previous)
            previous = entity
    merged.append(previous)
    return merged
