// Loads Debian's libprotobuf (3.21) into the process of the test it is
// linked into, as gRPC and LibTorch load it into favor-server: SentencePiece,
// whose library carries its own protobuf 3.14, must work beside it
// (sentencepiece_bridge.h). Linked directly, the two abort the process
// before main().
#include <google/protobuf/descriptor.pb.h>

namespace {

const bool kProtobufLoaded = [] {
  google::protobuf::FileDescriptorProto proto;
  proto.set_name("loaded");
  return proto.ByteSizeLong() > 0;
}();

}  // namespace
