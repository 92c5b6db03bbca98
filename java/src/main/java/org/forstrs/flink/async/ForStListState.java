package org.forstrs.flink.async;

import org.apache.flink.api.common.state.v2.StateFuture;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.state.StateFutureUtils;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;
import org.apache.flink.runtime.state.v2.AbstractListState;
import org.apache.flink.util.function.ThrowingConsumer;

import org.forstrs.flink.state.BatchDecoder;
import org.forstrs.flink.state.BatchEncoder;
import org.forstrs.flink.state.ValueSerde;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * List state in Flink's layout: one key per (key, namespace), the elements joined by {@code ','};
 * adds are merges (appends) that need no read.
 */
final class ForStListState<K, N, V> extends AbstractListState<K, N, V> implements BatchState {

    private final int cf;
    private final KeySerde<K, N> keys;

    /** Per executor thread: batches run concurrently and serializers may keep scratch state. */
    private final ThreadLocal<TypeSerializer<V>> elementSerializer;

    ForStListState(
            StateRequestHandler handler,
            TypeSerializer<V> elementSerializer,
            int cf,
            KeySerde<K, N> keys) {
        super(handler, elementSerializer);
        this.elementSerializer = ThreadLocal.withInitial(elementSerializer::duplicate);
        this.cf = cf;
        this.keys = keys;
    }

    @Override
    public void encode(StateRequest<?, ?, ?, ?> request, BatchEncoder enc) throws Exception {
        byte[] key = keys.key(Requests.context(request), Requests.namespace(request));
        switch (request.getRequestType()) {
            case LIST_GET:
                enc.op(BatchEncoder.GET, cf, key);
                break;
            case LIST_ADD:
                V value = Requests.payload(request);
                if (value == null) {
                    throw new NullPointerException("You cannot add null to a list state");
                }
                enc.op(
                        BatchEncoder.MERGE,
                        cf,
                        key,
                        ValueSerde.serialize(elementSerializer.get(), value));
                break;
            case LIST_UPDATE:
                {
                    List<V> values = Requests.payload(request);
                    if (values == null || values.isEmpty()) {
                        enc.op(BatchEncoder.DELETE, cf, key);
                    } else {
                        enc.op(
                                BatchEncoder.PUT,
                                cf,
                                key,
                                ValueSerde.serializeList(elementSerializer.get(), values));
                    }
                    break;
                }
            case LIST_ADD_ALL:
                {
                    List<V> values = Requests.payload(request);
                    if (values != null && !values.isEmpty()) {
                        enc.op(
                                BatchEncoder.MERGE,
                                cf,
                                key,
                                ValueSerde.serializeList(elementSerializer.get(), values));
                    }
                    break;
                }
            case CLEAR:
                enc.op(BatchEncoder.DELETE, cf, key);
                break;
            default:
                throw Requests.unsupported(request);
        }
    }

    @Override
    public void complete(StateRequest<?, ?, ?, ?> request, BatchDecoder dec) {
        if (request.getRequestType() != StateRequestType.LIST_GET) {
            Requests.complete(request, null);
            return;
        }
        byte[] bytes = dec.readOptionalBytes();
        Requests.completeWith(
                request,
                () ->
                        new ChunkIterator<>(
                                this,
                                StateRequestType.LIST_GET,
                                getStateRequestHandler(),
                                bytes == null
                                        ? Collections.<V>emptyList()
                                        : ValueSerde.deserializeList(elementSerializer.get(), bytes),
                                null));
    }

    /**
     * Moves the elements of the source namespaces to the end of the target's list (merging
     * windows): reads every source, then clears the sources and appends to the target.
     */
    @Override
    public StateFuture<Void> asyncMergeNamespaces(N target, Collection<N> sources) {
        List<N> from = nonNullSources(sources);
        if (from.isEmpty()) {
            return StateFutureUtils.completedVoidFuture();
        }
        List<StateFuture<List<V>>> reads = new ArrayList<>(from.size());
        for (N source : from) {
            setCurrentNamespace(source);
            List<V> elements = new ArrayList<>();
            ThrowingConsumer<V, Exception> collect = elements::add;
            reads.add(asyncGet().thenCompose(it -> it.onNext(collect)).thenApply(v -> elements));
        }
        setCurrentNamespace(target);
        return StateFutureUtils.combineAll(reads)
                .thenCompose(
                        lists -> {
                            List<StateFuture<Void>> writes = new ArrayList<>(from.size() + 1);
                            List<V> merged = new ArrayList<>();
                            for (N source : from) {
                                setCurrentNamespace(source);
                                writes.add(asyncClear());
                            }
                            lists.forEach(merged::addAll);
                            setCurrentNamespace(target);
                            if (!merged.isEmpty()) {
                                writes.add(asyncAddAll(merged));
                            }
                            return StateFutureUtils.combineAll(writes).thenAccept(done -> {});
                        });
    }

    @Override
    public void mergeNamespaces(N target, Collection<N> sources) {
        List<N> from = nonNullSources(sources);
        if (from.isEmpty()) {
            return;
        }
        List<V> merged = new ArrayList<>();
        for (N source : from) {
            setCurrentNamespace(source);
            get().forEach(merged::add);
            clear();
        }
        setCurrentNamespace(target);
        if (!merged.isEmpty()) {
            addAll(merged);
        }
    }

    private static <N> List<N> nonNullSources(Collection<N> sources) {
        List<N> from = new ArrayList<>();
        if (sources != null) {
            for (N source : sources) {
                if (source != null) {
                    from.add(source);
                }
            }
        }
        return from;
    }
}
