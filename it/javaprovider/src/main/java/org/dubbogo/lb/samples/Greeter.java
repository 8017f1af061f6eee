package org.dubbogo.lb.samples;

import com.google.protobuf.StringValue;

/**
 * The greeter service of the samples (samples/internal/greeter): a plain Java interface
 * whose one method takes and returns a protobuf message, which Dubbo's triple protocol
 * serves as protobuf (no generated code, no wrapping), so that dubbo-go's consumer of
 * {@code rpc Hello(google.protobuf.StringValue) returns (google.protobuf.StringValue)}
 * calls it as it calls a dubbo-go provider.
 */
public interface Greeter {
    /** Answers a key with the name of the provider that answered. */
    @SuppressWarnings("checkstyle:MethodName") // the wire name is "Hello"
    StringValue Hello(StringValue request);
}
