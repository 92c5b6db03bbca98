package org.forstrs.fs;

import org.forstrs.jni.ForStNative;
import org.forstrs.jni.TestBatch;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Child JVM of {@link ProxyJvmExitITCase}: uses a database through the file-system proxy from
 * several native threads (the storage pool's reads, the flush and compaction threads), then ends
 * while they are busy, without closing anything: {@code exit} calls System.exit, {@code return}
 * returns from main (the JVM then waits for non-daemon threads only).
 *
 * <p>Arguments: database URL, {@code exit} or {@code return}.
 */
public final class ProxyExitMain {

    private ProxyExitMain() {}

    public static void main(String[] args) throws Exception {
        String url = args[0];
        long db =
                ForStNative.open(
                        url,
                        new String[] {
                            "fs.force-proxy", "true",
                            "memtable-bytes", "65536",
                            "block-cache-bytes", "0"
                        });
        int cf = ForStNative.createColumnFamily(db, "state");
        for (int i = 0; i < EngineBehaviour.KEYS; i++) {
            EngineBehaviour.put(db, cf, EngineBehaviour.key(i), EngineBehaviour.value(i));
        }
        ForStNative.flush(db);

        AtomicLong reads = new AtomicLong();
        for (int t = 0; t < 4; t++) {
            int seed = t;
            Thread reader =
                    new Thread(
                            () -> {
                                // Each batch's gets run as concurrent block reads on native
                                // threads attached to this JVM; writes keep flushes going.
                                for (int i = seed; ; i++) {
                                    TestBatch batch = new TestBatch();
                                    for (int k = 0; k < 64; k++) {
                                        batch.add(TestBatch.GET, cf, EngineBehaviour.key((i * 64 + k) % EngineBehaviour.KEYS), null);
                                    }
                                    EngineBehaviour.execute(db, batch);
                                    EngineBehaviour.put(db, cf, "w" + seed + "-" + i, EngineBehaviour.value(i));
                                    reads.addAndGet(64);
                                }
                            },
                            "proxy-reader-" + t);
            reader.setDaemon(true);
            reader.start();
        }
        while (reads.get() < 5_000) {
            Thread.sleep(10);
        }
        System.out.println("READY " + reads.get());
        System.out.flush();
        if (args[1].equals("exit")) {
            System.exit(0);
        }
    }
}
