package pocketbert.webview;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class PageQueryTest {
    private static final String NER = "6d6668af7acf8dccb47e586278da15d2c583f735057c5a9de31117bdc1057dff";
    private static final String CLS = "B6EAECF554EA983615FD7E6EBD22BCF20896AED8A12281C11D83D65D8C6E9721";

    @Test
    void thePhoneLayoutAndBothPins() {
        assertEquals("?shell=android&ner_pin=" + NER + "&classification_pin=" + CLS.toLowerCase(),
                PageQuery.of(null, new String[] {NER, CLS}, false, 5, 30));
    }

    @Test
    void aMeasureRunAsTheIntentAsksForIt() {
        assertEquals("?shell=android&task=classification&measure=1&warmup=2&runs=7",
                PageQuery.of("classification", new String[] {null, null}, true, 2, 7));
        // nonsense counts are clamped to what the page accepts
        assertEquals("?shell=android&task=ner&measure=1&warmup=0&runs=1",
                PageQuery.of("ner", new String[] {null, null}, true, -3, 0));
    }

    @Test
    void whatIsNotAPinOrATaskIsLeftOut() {
        assertEquals("?shell=android", PageQuery.of("<script>", new String[] {"sha256:" + NER, NER + "&x=1"}, false, 5, 30));
        assertEquals("?shell=android", PageQuery.of("ner&measure=1", new String[] {"", "zz"}, false, 5, 30));
    }
}
