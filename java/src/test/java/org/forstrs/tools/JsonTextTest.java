package org.forstrs.tools;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.types.Row;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** How decoded state is rendered as JSON, and that no value makes the rendering loop. */
class JsonTextTest {

    /** A user's type with a field of its own type. */
    static final class Node {
        final String name;
        Node next;

        Node(String name) {
            this.name = name;
        }
    }

    @Test
    void rendersStateValuesCompactlyWithKeysInAStableOrder() {
        Map<Object, Object> map = new LinkedHashMap<>();
        map.put("b", 2L);
        map.put("a", List.of(1, "x\"y\n"));
        assertThat(JsonText.of(map)).isEqualTo("{\"a\":[1,\"x\\\"y\\n\"],\"b\":2}");
        assertThat(JsonText.of(Map.of(2, "two"))).isEqualTo("[[2,\"two\"]]");
        assertThat(JsonText.of(Tuple2.of("k", 1.5))).isEqualTo("[\"k\",1.5]");
        assertThat(JsonText.of(Double.NaN)).isEqualTo("\"NaN\"");
        assertThat(JsonText.of(new TtlValue<>("v", 7L)))
                .isEqualTo("{\"value\":\"v\",\"lastAccessTimestamp\":7}");
        assertThat(JsonText.of(Row.of("r", null))).isEqualTo("[\"r\",null]");
        assertThat(JsonText.of(VoidNamespace.INSTANCE)).isEqualTo("\"VoidNamespace\"");
        assertThat(JsonText.of(new byte[] {1, (byte) 0xab})).isEqualTo("{\"raw\":\"01ab\"}");
        assertThat(JsonText.of(new Node("n"))).isEqualTo("{\"name\":\"n\",\"next\":null}");
        assertThat(JsonText.string("tab\there\u0001")).isEqualTo("\"tab\\there\\u0001\"");
    }

    @Test
    void aValueThatContainsItselfIsCutWhereItRecurs() {
        Node a = new Node("a");
        Node b = new Node("b");
        a.next = b;
        b.next = a;
        assertThat(JsonText.of(a))
                .isEqualTo(
                        "{\"name\":\"a\",\"next\":{\"name\":\"b\",\"next\":\""
                                + JsonText.CYCLE
                                + "\"}}");
        List<Object> self = new ArrayList<>();
        self.add(self);
        assertThat(JsonText.of(self)).isEqualTo("[\"" + JsonText.CYCLE + "\"]");
        // The same value twice side by side is no cycle.
        List<String> shared = List.of("s");
        assertThat(JsonText.of(List.of(shared, shared))).isEqualTo("[[\"s\"],[\"s\"]]");
    }

    @Test
    void nestingBeyondTheLimitIsCut() {
        Object value = "leaf";
        for (int i = 0; i < 10_000; i++) {
            value = List.of(value);
        }
        String json = JsonText.of(value);
        assertThat(json).contains(JsonText.TOO_DEEP).doesNotContain("leaf");
        assertThat(json).startsWith("[".repeat(JsonText.MAX_DEPTH) + "\"");
    }
}
