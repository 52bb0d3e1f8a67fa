package pocketbert.core.text;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import pocketbert.core.JsonValues;

/** Differences between Java encodings and expected windows (golden or fuzz JSON), field by field. */
final class EncodingDiff {
    private EncodingDiff() {
    }

    /** Empty if equal; otherwise one line per differing field. */
    static List<String> of(List<Encoding> got, List<Object> expectedWindows) {
        List<String> diffs = new ArrayList<>();
        if (got.size() != expectedWindows.size()) {
            diffs.add("windows: expected " + expectedWindows.size() + ", got " + got.size());
            return diffs;
        }
        for (int w = 0; w < got.size(); w++) {
            Encoding e = got.get(w);
            Map<String, Object> want = JsonValues.object(expectedWindows.get(w));
            String at = got.size() > 1 ? "window " + w + " " : "";
            compare(diffs, at + "input_ids", JsonValues.ints(want.get("input_ids")), e.ids());
            if (!JsonValues.strings(want.get("tokens")).equals(e.tokens())) {
                diffs.add(at + "tokens: expected " + JsonValues.strings(want.get("tokens")) + ", got " + e.tokens());
            }
            if (want.containsKey("token_type_ids")) {
                compare(diffs, at + "token_type_ids", JsonValues.ints(want.get("token_type_ids")), e.typeIds());
            }
            if (want.containsKey("attention_mask")) {
                compare(diffs, at + "attention_mask", JsonValues.ints(want.get("attention_mask")), e.attentionMask());
            }
            compare(diffs, at + "special_tokens_mask", JsonValues.ints(want.get("special_tokens_mask")),
                    e.specialTokensMask());
            int[][] offsets = JsonValues.spans(want.get("offsets"));
            int[][] got16 = new int[2][e.length()];
            int[][] gotCp = new int[2][e.length()];
            for (int i = 0; i < e.length(); i++) {
                gotCp[0][i] = e.start(i);
                gotCp[1][i] = e.end(i);
                got16[0][i] = e.startUtf16(i);
                got16[1][i] = e.endUtf16(i);
            }
            compare(diffs, at + "offset starts", offsets[0], gotCp[0]);
            compare(diffs, at + "offset ends", offsets[1], gotCp[1]);
            if (want.get("offsets_utf16") != null) {
                int[][] utf16 = JsonValues.spans(want.get("offsets_utf16"));
                compare(diffs, at + "UTF-16 offset starts", utf16[0], got16[0]);
                compare(diffs, at + "UTF-16 offset ends", utf16[1], got16[1]);
            }
        }
        return diffs;
    }

    private static void compare(List<String> diffs, String field, int[] expected, int[] got) {
        if (!Arrays.equals(expected, got)) {
            diffs.add(field + ": expected " + Arrays.toString(expected) + ", got " + Arrays.toString(got));
        }
    }

    /** The Java encodings of a golden/fuzz record ({@code text}, {@code text_pair}, {@code max_length}, {@code stride}). */
    static List<Encoding> encode(WordPieceTokenizer tokenizer, Map<String, Object> record) {
        String text = (String) record.get("text");
        Object pair = record.get("text_pair");
        int maxLength = ((Number) record.get("max_length")).intValue();
        Object stride = record.get("stride");
        if (stride != null) {
            return tokenizer.encodeWindows(text, maxLength, ((Number) stride).intValue());
        }
        if (pair != null) {
            return java.util.Collections.singletonList(tokenizer.encodePair(text, (String) pair, maxLength));
        }
        return java.util.Collections.singletonList(tokenizer.encode(text, maxLength));
    }
}
