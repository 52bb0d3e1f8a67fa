package pocketbert.core.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void readsEveryValueType() {
        Map<String, Object> m = Json.parseObject(" {\"s\": \"x\", \"i\": -12, \"d\": 1.5e3, \"t\": true, \"f\": false,"
                + " \"n\": null, \"a\": [1, [], {}], \"o\": {\"k\": \"v\"}}\n");
        assertEquals("x", m.get("s"));
        assertEquals(-12L, m.get("i"));
        assertEquals(1500.0, m.get("d"));
        assertEquals(Boolean.TRUE, m.get("t"));
        assertEquals(Boolean.FALSE, m.get("f"));
        assertTrue(m.containsKey("n"));
        assertNull(m.get("n"));
        List<?> a = (List<?>) m.get("a");
        assertEquals(3, a.size());
        assertEquals(1L, a.get(0));
        assertEquals("v", ((Map<?, ?>) m.get("o")).get("k"));
    }

    @Test
    void keepsKeyOrderAndRefusesARepeatedKey() {
        Map<String, Object> m = Json.parseObject("{\"b\": 1, \"a\": 2}");
        assertEquals(Arrays.asList("b", "a"), Arrays.asList(m.keySet().toArray()));
        JsonException e = assertThrows(JsonException.class, () -> Json.parse("{\"b\": 1, \"a\": {\"b\": 2, \"b\": 3}}"));
        assertTrue(e.getMessage().contains("the key \"b\" appears twice in one object"), e.getMessage());
        assertEquals(23, e.offset());
    }

    @Test
    void decodesEscapesAndSurrogatePairs() {
        assertEquals("\"\\/\b\f\n\r\t é 😀", Json.parse("\"\\\"\\\\\\/\\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00\""));
        assertEquals("東京 😀", Json.parse("\"東京 😀\""));
    }

    @Test
    void integersBeyond64BitsAndFloatsKeepTheirValue() {
        assertEquals(Long.MAX_VALUE, Json.parse("9223372036854775807"));
        assertEquals(new BigInteger("9223372036854775808"), Json.parse("9223372036854775808"));
        assertEquals(Long.MIN_VALUE, Json.parse("-9223372036854775808"));
        assertEquals(0.1, Json.parse("0.1"));
        assertEquals(-0.0, Json.parse("-0.0"));
        assertEquals(2.5e-8, Json.parse("2.5E-8"));
    }

    @Test
    void readsPythonsNonFiniteNumbers() {
        assertTrue(Double.isNaN((Double) Json.parse("NaN")));
        assertEquals(Double.POSITIVE_INFINITY, Json.parse("Infinity"));
        assertEquals(Double.NEGATIVE_INFINITY, ((List<?>) Json.parse("[-Infinity]")).get(0));
    }

    @Test
    void refusesMalformedDocumentsAndSaysWhere() {
        String[][] cases = {
            {"", "unexpected end"}, {"{", "expected a string key"}, {"{\"a\" 1}", "expected ':'"},
            {"[1 2]", "expected ',' or ']'"}, {"{\"a\": 1,}", "expected a string key"}, {"[1,]", "unexpected character"},
            {"01", "leading zeros"}, {"1.", "digit after the decimal point"}, {"1e", "digit in the exponent"},
            {"-", "expected a digit"}, {"\"a\nb\"", "raw control character"}, {"\"\\x\"", "invalid escape"},
            {"\"\\u12g4\"", "invalid hex digit"}, {"\"abc", "closing"}, {"tru", "unexpected character"},
            {"{} {}", "unexpected text after"}, {"'a'", "unexpected character"}, {"nan", "unexpected character"},
        };
        for (String[] c : cases) {
            JsonException e = assertThrows(JsonException.class, () -> Json.parse(c[0]), c[0]);
            assertTrue(e.getMessage().contains(c[1]), "'" + c[0] + "' gave: " + e.getMessage());
            assertTrue(e.getMessage().contains("at character"), e.getMessage());
        }
        assertEquals(6, assertThrows(JsonException.class, () -> Json.parse("[1, 2 3]")).offset());
    }

    @Test
    void refusesNestingDeeperThanTheLimitInsteadOfOverflowingTheStack() {
        StringBuilder deep = new StringBuilder();
        for (int i = 0; i < 100_000; i++) {
            deep.append('[');
        }
        JsonException e = assertThrows(JsonException.class, () -> Json.parse(deep.toString()));
        assertTrue(e.getMessage().contains("nesting deeper than " + Json.MAX_DEPTH), e.getMessage());
        StringBuilder ok = new StringBuilder();
        for (int i = 0; i < Json.MAX_DEPTH; i++) {
            ok.append('[');
        }
        for (int i = 0; i < Json.MAX_DEPTH; i++) {
            ok.append(']');
        }
        assertTrue(Json.parse(ok.toString()) instanceof List);
    }

    @Test
    void parseObjectRefusesOtherValues() {
        JsonException e = assertThrows(JsonException.class, () -> Json.parseObject("[1]"));
        assertTrue(e.getMessage().contains("expected a JSON object, got array"), e.getMessage());
    }

    @Test
    void parsedContainersCannotBeModified() {
        Map<String, Object> m = Json.parseObject("{\"a\": [1]}");
        assertThrows(UnsupportedOperationException.class, () -> m.put("b", 2));
        List<?> list = (List<?>) m.get("a");
        assertThrows(UnsupportedOperationException.class, () -> list.add(null));
    }
}
